// Command keel-task is Keel's long-running task on Fargate: it steps one
// spilled run (KEEL_RUN_ID) without Lambda's 15-minute bound, heartbeating
// and finally answering the RunOnFargate task token (KEEL_TASK_TOKEN).
// SIGTERM (a deploy, a scale-in, ECS stopping the task) ends it after the
// current step: that step's commit releases the lease, and the task hands
// back "continue" so the state machine goes on in a fresh Step.
// Wiring only; the task is entry.RunTask (internal/entry).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/keelrun/keel/internal/entry"
)

func main() {
	ctx := context.Background()
	log := entry.Logger(os.Getenv)
	fail := func(err error) { log.Error("keel-task failed", "err", err); os.Exit(1) }
	stop := make(chan struct{})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	go func() { <-sig; log.Info("keel-task: stop requested"); close(stop) }()

	deps, _, err := entry.Load(ctx, os.Getenv, "fargate")
	if err != nil {
		fail(err)
	}
	if err := entry.RunTask(ctx, deps, stop); err != nil {
		fail(err)
	}
}
