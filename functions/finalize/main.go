// Command finalize is Keel's finalize Lambda function: records a run's final status, output and error (the Finalize state).
// Wiring only; the function is built by entry.NewFinalize (internal/entry).
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/keelrun/keel/internal/entry"
)

func main() {
	ctx := context.Background()
	deps, log, err := entry.Load(ctx, os.Getenv, "lambda/finalize")
	if err != nil {
		log.Error("finalize: init failed", "err", err)
		os.Exit(1)
	}
	fn, err := entry.NewFinalize(ctx, deps)
	if err != nil {
		log.Error("finalize: init failed", "err", err)
		os.Exit(1)
	}
	lambda.Start(fn.Handle)
}
