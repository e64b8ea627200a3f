// Command finalize is Keel's finalize Lambda function: records a run's final status, output and error (the Finalize state).
// Wiring only; the function is built by entry.NewFinalize (internal/entry).
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
	fail := func(err error) { log.Error("finalize: init failed", "err", err); os.Exit(1) }
	env, err := entry.FromEnv(os.Getenv, "lambda/finalize")
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
	fn, err := entry.NewFinalize(ctx, deps)
	if err != nil {
		fail(err)
	}
	lambda.Start(fn.Handle)
}
