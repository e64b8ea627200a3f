// Command peers runs the same workload on Keel, the floor, LangGraph.js
// and a Temporal dev server, one after another in one invocation, at each
// N, and prints one table (ms per step, ratio to the floor, store bytes,
// bytes written per step, peak RSS) and writes it as JSON:
//
//	go run ./bench/peers [-n 10,100,1000] [-json bench/results/peers.json]   (make bench-peers)
//
// The workload: N iterations of an instant model call → an instant tool
// call → the durable checkpoint, two messages appended per iteration, then
// a final answer. Every contender is a child process of its own, so its
// peak RSS (getrusage of the child; for Temporal, the worker's plus the
// dev server's VmHWM) and what it writes are its own. A peer that is not
// installed is a row that says so and why.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Row is one system at one N.
type Row struct {
	System            string  `json:"system"`
	N                 int     `json:"n"`
	MSPerStep         float64 `json:"ms_per_step,omitempty"`
	RatioToFloor      float64 `json:"ratio_to_floor,omitempty"`
	StoreBytes        int64   `json:"store_bytes,omitempty"`
	WriteBytesPerStep float64 `json:"write_bytes_per_step,omitempty"`
	PeakRSSBytes      int64   `json:"peak_rss_bytes,omitempty"`
	Note              string  `json:"note,omitempty"`
	Skipped           string  `json:"skipped,omitempty"`
}

// Options say what to run and where the contenders are.
type Options struct {
	Ns      []int
	Systems []string
	// Root is the repository root (bench/peers/... is under it).
	Root string
	// Work is a scratch directory (default: a new one under $TMPDIR);
	// every run gets a directory under it.
	Work string
	// Temporal is the temporal CLI; Node the node binary.
	Temporal, Node string
	Log            func(format string, args ...any)
}

func main() {
	ns := flag.String("n", "10,100,1000", "iteration counts, comma-separated")
	systems := flag.String("systems", "floor,keel,langgraph,temporal", "systems to run, comma-separated")
	out := flag.String("json", "bench/results/peers.json", "write the table here as JSON (empty: do not)")
	temporal := flag.String("temporal", "bin/temporal", "the temporal CLI (make bench-peers installs it)")
	node := flag.String("node", "node", "the node binary")
	flag.Parse()
	o := Options{Systems: strings.Split(*systems, ","), Temporal: *temporal, Node: *node,
		Log: func(f string, a ...any) { fmt.Fprintf(os.Stderr, "bench-peers: "+f+"\n", a...) }}
	for _, s := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bench-peers: -n %q: want positive integers, comma-separated\n", *ns)
			os.Exit(2)
		}
		o.Ns = append(o.Ns, n)
	}
	var err error
	if o.Root, err = os.Getwd(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-peers:", err)
		os.Exit(1)
	}
	rows, err := Run(context.Background(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-peers:", err)
		os.Exit(1)
	}
	Print(os.Stdout, rows)
	if *out != "" {
		if err := writeJSON(*out, rows); err != nil {
			fmt.Fprintln(os.Stderr, "bench-peers:", err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "bench-peers: wrote %s\n", *out)
	}
}

// Run runs every system at every N and returns the rows, the floor's
// first at each N.
func Run(ctx context.Context, o Options) ([]Row, error) {
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	if o.Work == "" {
		w, err := os.MkdirTemp("", "keel-bench-peers-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(w)
		o.Work = w
	}
	bins := filepath.Join(o.Work, "bin")
	keelstep := filepath.Join(bins, "keelstep")
	if err := goBuild(ctx, o.Root, keelstep, "./bench/peers/keelstep"); err != nil {
		return nil, err
	}
	peers := map[string]func(ctx context.Context, dir string, n int) Row{
		"floor":     func(ctx context.Context, dir string, n int) Row { return runKeelstep(ctx, keelstep, "floor", dir, n) },
		"keel":      func(ctx context.Context, dir string, n int) Row { return runKeelstep(ctx, keelstep, "keel", dir, n) },
		"langgraph": newLangGraph(o),
		"temporal":  newTemporal(ctx, o, bins),
	}
	var rows []Row
	for _, n := range o.Ns {
		var floor float64
		for i, sys := range o.Systems {
			f, ok := peers[sys]
			if !ok {
				return nil, fmt.Errorf("-systems: unknown system %q (want floor, keel, langgraph, temporal)", sys)
			}
			dir := filepath.Join(o.Work, fmt.Sprintf("%s-%d-%d", sys, n, i))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			start := time.Now()
			r := f(ctx, dir, n)
			r.System, r.N = sys, n
			if sys == "floor" && r.Skipped == "" {
				floor = r.MSPerStep
			}
			if floor > 0 && r.Skipped == "" {
				r.RatioToFloor = r.MSPerStep / floor
			}
			o.Log("%s N=%d: %.3f ms/step %s(%s)", sys, n, r.MSPerStep, r.Skipped, time.Since(start).Round(time.Millisecond))
			rows = append(rows, r)
			_ = os.RemoveAll(dir)
		}
	}
	return rows, nil
}

func writeJSON(path string, rows []Row) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(map[string]any{"date": time.Now().UTC().Format(time.RFC3339), "rows": rows}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
