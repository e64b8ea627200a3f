// Command load is `make bench-load`: N concurrent research runs through
// `keel dev`'s HTTP API (the dev server in this process, on SQLite, with
// the research agent's scripted model), each approved as soon as it asks.
// It prints runs/s, approval → completed p50/p99 (from the approve call to
// the run_completed event reaching the client's stream), the harness's
// step commit p50/p99, write transactions (fsyncs) per step commit, peak
// RSS (server and clients: one process) and bytes of data per run.
//
//	go run ./bench/load -n 1000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // served only with -pprof, on a loopback address
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
)

func main() {
	n := flag.Int("n", 1000, "research runs to create at once")
	clients := flag.Int("clients", 32, "concurrent HTTP clients creating the runs")
	dir := flag.String("dir", "", "data directory (default: a new temporary one, removed after)")
	noGroup := flag.Bool("no-group", false, "one transaction (and fsync) per write: the store without group commit, for comparison")
	maxBatch := flag.Int("max-batch", 0, "writes per group transaction at most (default: the store's)")
	maxInv := flag.Int("max-invocations", 0, "Lambda handlers running at once (default: keel dev's)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	jsonOut := flag.String("json", "", "also write the result as JSON to this file")
	pprofAddr := flag.String("pprof", "", "serve net/http/pprof (CPU, mutex, block, goroutine profiles) on this loopback address during the run, e.g. 127.0.0.1:6060")
	flag.Parse()
	if *pprofAddr != "" {
		host, _, err := net.SplitHostPort(*pprofAddr)
		if ip := net.ParseIP(host); err != nil || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
			fmt.Fprintln(os.Stderr, "load: -pprof: want a loopback host:port, got", *pprofAddr)
			os.Exit(2)
		}
		// Every contention event and blocking wait of 10µs or more is
		// sampled, so the mutex and block profiles show the waits.
		runtime.SetMutexProfileFraction(1)
		runtime.SetBlockProfileRate(10_000)
		go func() { _ = http.ListenAndServe(*pprofAddr, nil) }()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	d := *dir
	if d == "" {
		tmp, err := os.MkdirTemp("", "keel-bench-load-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
		defer os.RemoveAll(tmp)
		d = tmp
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "load: -cpuprofile:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	res, err := Run(ctx, Config{N: *n, Clients: *clients, Dir: d, NoGroup: *noGroup, MaxBatch: *maxBatch, MaxInvocations: *maxInv})
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
	fmt.Printf("runs                        %d (%d completed; %v)\n", res.N, res.Completed, res.StatusCounts)
	fmt.Printf("wall time                   %.2f s (creation %.2f s)\n", res.Seconds, res.CreateSeconds)
	fmt.Printf("runs/s                      %.1f\n", res.RunsPerSecond)
	fmt.Printf("approval → completed        p50 %.1f ms   p99 %.1f ms\n", res.ApprovalP50Ms, res.ApprovalP99Ms)
	fmt.Printf("step commit                 p50 %.2f ms   p99 %.2f ms   (%d commits, %d failed)\n", res.CommitP50Ms, res.CommitP99Ms, res.StepCommits, res.CommitFailures)
	fmt.Printf("write transactions (fsyncs) %d for %d writes; %.3f per step commit\n", res.Transactions, res.Writes, res.FsyncsPerStep)
	fmt.Printf("artifact fsyncs per run     %.2f\n", res.ArtifactFsyncsPerRun)
	fmt.Printf("store writer busy           %.0f %% of wall time (%.0f %% in COMMIT)\n", 100*res.WriterBusy, 100*res.WriterCommit)
	fmt.Printf("peak RSS                    %.0f MB\n", res.PeakRSSMB)
	fmt.Printf("bytes per run               %d\n", res.BytesPerRun)
	fmt.Printf("CPU (user+system)           %.1f s over %.1f s of wall time (%.2f cores of 2)\n", res.CPUSeconds, res.Seconds, res.CPUSeconds/res.Seconds)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
	}
}
