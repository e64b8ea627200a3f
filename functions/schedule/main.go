// Command schedule is Keel's schedule Lambda function: an EventBridge Scheduler occurrence creates and starts one run, idempotently per scheduled time.
// Wiring only; the function is built by entry.NewSchedule (internal/entry).
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/keelrun/keel/internal/entry"
)

func main() {
	ctx := context.Background()
	log := entry.Logger(os.Getenv)
	fail := func(err error) { log.Error("schedule: init failed", "err", err); os.Exit(1) }
	env, err := entry.FromEnv(os.Getenv, "lambda/schedule")
	if err != nil {
		fail(err)
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fail(err)
	}
	deps, err := entry.AWSDeps(env, awsCfg, log)
	if err != nil {
		fail(err)
	}
	fn, err := entry.NewSchedule(ctx, deps)
	if err != nil {
		fail(err)
	}
	lambda.Start(fn.Handle)
}
