package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// newLangGraph returns the LangGraph.js runner: bench/peers/langgraph's
// bench.mjs on node, with the packages its lockfile pins (make
// bench-peers runs npm ci there).
func newLangGraph(o Options) func(ctx context.Context, dir string, n int) Row {
	pkg := filepath.Join(o.Root, "bench", "peers", "langgraph")
	return func(ctx context.Context, dir string, n int) Row {
		if _, err := exec.LookPath(o.Node); err != nil {
			return Row{Skipped: fmt.Sprintf("no %s on PATH", o.Node)}
		}
		if _, err := os.Stat(filepath.Join(pkg, "node_modules", "@langchain", "langgraph-checkpoint-sqlite")); err != nil {
			return Row{Skipped: "not installed: npm ci in bench/peers/langgraph (make bench-peers runs it)"}
		}
		cmd := exec.CommandContext(ctx, o.Node, filepath.Join(pkg, "bench.mjs"), fmt.Sprint(n), dir)
		cmd.Dir = pkg
		res, rss, err := runChild(cmd)
		if err != nil {
			return Row{Skipped: "failed: " + err.Error()}
		}
		return row(res, rss)
	}
}
