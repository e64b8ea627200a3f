// Command demo runs the Keel demo (see package internal/local/demo). `make demo`
// builds bin/keel and bin/pubserver and runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/local/demo"
)

func main() {
	keel := flag.String("keel", "bin/keel", "keel binary")
	pub := flag.String("pubserver", "bin/pubserver", "publication server binary")
	spill := flag.Bool("spill", true, "run analyze_documents in the long-running task")
	flag.Parse()
	dir, err := os.MkdirTemp("", "keel-demo-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	start := time.Now()
	res, err := demo.Run(ctx, demo.Config{Keel: *keel, PubServer: *pub, Dir: dir, Out: os.Stdout, Spill: *spill})
	cancel()
	stop()
	if err == nil && (res.Status != run.StatusCompleted || res.Publications != 1) {
		err = fmt.Errorf("run ended %s with %d publications", res.Status, res.Publications)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo failed: %v (logs in %s)\n", err, dir)
		os.Exit(1)
	}
	fmt.Printf("demo done in %.1fs (logs in %s)\n", time.Since(start).Seconds(), dir)
}
