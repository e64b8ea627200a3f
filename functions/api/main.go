// Command api is Keel's api Lambda function: the HTTP API behind API Gateway (HTTP API, payload format 2.0).
// Wiring only; the function is built by entry.NewAPI (internal/entry).
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/keelrun/keel/internal/entry"
)

func main() {
	ctx := context.Background()
	deps, log, err := entry.Load(ctx, os.Getenv, "lambda/api")
	if err != nil {
		log.Error("api: init failed", "err", err)
		os.Exit(1)
	}
	fn, err := entry.NewAPI(ctx, deps)
	if err != nil {
		log.Error("api: init failed", "err", err)
		os.Exit(1)
	}
	lambda.Start(fn.Handle)
}
