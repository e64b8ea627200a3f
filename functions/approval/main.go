// Command approval is Keel's approval Lambda function: records the AwaitApproval task token on the approval (and answers it at once if the decision came first).
// Wiring only; the function is built by entry.NewApproval (internal/entry).
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
	fail := func(err error) { log.Error("approval: init failed", "err", err); os.Exit(1) }
	env, err := entry.FromEnv(os.Getenv, "lambda/approval")
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
	fn, err := entry.NewApproval(ctx, deps)
	if err != nil {
		fail(err)
	}
	lambda.Start(fn.Handle)
}
