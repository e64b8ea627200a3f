// Command api is Keel's api Lambda function: the HTTP API behind API Gateway (HTTP API, payload format 2.0).
// Wiring only; the function is built by entry.NewAPI (internal/entry).
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
	fail := func(err error) { log.Error("api: init failed", "err", err); os.Exit(1) }
	env, err := entry.FromEnv(os.Getenv, "lambda/api")
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
	fn, err := entry.NewAPI(ctx, deps)
	if err != nil {
		fail(err)
	}
	lambda.Start(fn.Handle)
}
