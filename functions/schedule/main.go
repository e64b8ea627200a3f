// Command schedule is Keel's schedule Lambda function: an EventBridge Scheduler occurrence creates and starts one run, idempotently per scheduled time.
// Wiring only; the function is built by entry.NewSchedule (internal/entry).
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/keelrun/keel/internal/entry"
)

func main() {
	ctx := context.Background()
	deps, log, err := entry.Load(ctx, os.Getenv, "lambda/schedule")
	if err != nil {
		log.Error("schedule: init failed", "err", err)
		os.Exit(1)
	}
	fn, err := entry.NewSchedule(ctx, deps)
	if err != nil {
		log.Error("schedule: init failed", "err", err)
		os.Exit(1)
	}
	lambda.Start(fn.Handle)
}
