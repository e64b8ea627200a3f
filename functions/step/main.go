// Command step is Keel's step Lambda function: one bounded harness step of a run (the Step state of stepfunctions/run.asl.json).
// Wiring only; the function is built by entry.NewStep (internal/entry).
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/keelrun/keel/internal/entry"
)

func main() {
	ctx := context.Background()
	deps, log, err := entry.Load(ctx, os.Getenv, "lambda/step")
	if err != nil {
		log.Error("step: init failed", "err", err)
		os.Exit(1)
	}
	fn, err := entry.NewStep(ctx, deps)
	if err != nil {
		log.Error("step: init failed", "err", err)
		os.Exit(1)
	}
	lambda.Start(fn.Handle)
}
