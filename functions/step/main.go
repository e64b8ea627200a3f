// Command step is Keel's step Lambda function: one bounded harness step of a run (the Step state of stepfunctions/run.asl.json).
// Wiring only; the function is built by entry.NewStep (internal/entry).
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
	fail := func(err error) { log.Error("step: init failed", "err", err); os.Exit(1) }
	env, err := entry.FromEnv(os.Getenv, "lambda/step")
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
	fn, err := entry.NewStep(ctx, deps)
	if err != nil {
		fail(err)
	}
	lambda.Start(fn.Handle)
}
