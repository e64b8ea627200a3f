// Command long is `make bench-long`: one run of N iterations (an instant
// scripted model call → an instant tool call → the durable checkpoint)
// through `keel dev` in this process, with a small Step budget so that the
// run takes many Steps and the state machine rolls it over into new
// generations (executions). It prints, at 1k, 10k and 100k iterations, the
// time per iteration (over the 1,000 iterations before the mark, and over
// the decade since the previous mark), the process's RSS, its Go heap in
// use and its live heap after a GC, and at the end the history events of
// each generation (Step Functions fails an execution at 25,000).
//
//	go run ./bench/long -n 100000
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"sort"
	"time"
)

func main() {
	if err := bench(); err != nil {
		fmt.Fprintln(os.Stderr, "long:", err)
		os.Exit(1)
	}
}

func bench() error {
	n := flag.Int("n", 100000, "iterations of the run")
	budget := flag.Duration("step-budget", 100*time.Millisecond, "one Step's time budget (small: many Steps, so that the run rolls over)")
	dir := flag.String("dir", "", "data directory (default: a new temporary one, removed after)")
	jsonOut := flag.String("json", "", "also write the result as JSON to this file")
	ctxTokens := flag.Int("context-tokens", 4096, "the agent's context window in tokens: what a model call is sent, and what the harness keeps of the run (0: the harness default)")
	refN := flag.Int("ref-n", 2000, "iterations of the reference run after the long one: the same loop in one Step, no state machine (0: none)")
	cpuProf := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	heapProf := flag.String("heapprofile", "", "write a heap profile at each mark to PREFIX-{iteration}.pb.gz (go tool pprof -inuse_space)")
	flag.Parse()
	if *ctxTokens < 0 {
		return errors.New("-context-tokens: want 0 (the harness default) or more")
	}
	if *refN < 0 {
		return errors.New("-ref-n: want 0 (no reference) or more")
	}
	if *budget <= 0 {
		return errors.New("-step-budget: want a positive duration")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	d := *dir
	if d == "" {
		tmp, err := os.MkdirTemp("", "keel-bench-long-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		d = tmp
	}
	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	marks := marksFor(*n)
	res, err := Run(ctx, Config{N: *n, StepBudget: *budget, Dir: d, Marks: marks, Window: min(1000, marks[0]),
		HeapProfile: *heapProf, ContextTokens: *ctxTokens, RefN: *refN})
	if err != nil {
		return err
	}
	printResult(res, *ctxTokens)
	if *jsonOut != "" {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// marksFor is where a run of n iterations is measured: at 1,000, 10,000
// and 100,000 iterations, those it reaches, and at its end.
func marksFor(n int) []int {
	var marks []int
	for _, m := range []int{1000, 10000, 100000} {
		if m <= n {
			marks = append(marks, m)
		}
	}
	if len(marks) == 0 || marks[len(marks)-1] != n {
		marks = append(marks, n)
	}
	return marks
}

// printResult prints the marks' table, the reference and the history of
// each generation.
func printResult(res Result, ctxTokens int) {
	fmt.Printf("run of %d iterations: %s in %.1f s, %d model steps; context window %d tokens\n", res.N, res.Status, res.Seconds, res.Steps, ctxTokens)
	fmt.Println("ms/iteration: over the 1,000 iterations before the mark (split into the model call and Keel's rest); decade: since the previous mark")
	fmt.Println("heap MB: Go heap in use as sampled; live MB: in use right after a forced GC; Go MB: what the Go runtime holds (RSS beyond it: the binary's mapped code and SQLite's page caches)")
	fmt.Printf("%10s %13s %13s %13s %10s %8s %8s %8s %8s %10s %13s\n", "iteration", "ms/iteration", "  of it model", "  of it Keel", "decade ms", "RSS MB", "Go MB", "heap MB", "live MB", "elapsed s", "store B/iter")
	for _, m := range res.Marks {
		fmt.Printf("%10d %13.3f %13.3f %13.3f %10.3f %8.1f %8.1f %8.1f %8.1f %10.1f %13.0f\n", m.Iteration, m.MsPerIter, m.ModelMsPerIter, m.KeelMsPerIter, m.DecadeMsPerIter, m.RSSMB, m.GoMB, m.HeapMB, m.LiveMB, m.ElapsedSecs, m.BytesPerIter)
	}
	if ref := res.Reference; ref != nil {
		last := res.Marks[len(res.Marks)-1]
		fmt.Printf("reference, the same loop in one Step (no state machine, no Step boundaries): %d iterations, %.3f ms/iteration (model %.3f)\n", ref.N, ref.MsPerIter, ref.ModelMsPerIter)
		fmt.Printf("  the long run's last 1,000 iterations over the reference: %.2fx; its whole run: %.2fx\n", last.MsPerIter/ref.MsPerIter, res.Seconds*1000/float64(res.N)/ref.MsPerIter)
	}
	names := make([]string, 0, len(res.History))
	for k := range res.History {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Printf("generations (executions): %d; history events per generation: max %d (limit 25,000)\n", res.Generations, res.MaxHistory)
	for _, k := range names {
		fmt.Printf("  %-60s %6d\n", k, res.History[k])
	}
}
