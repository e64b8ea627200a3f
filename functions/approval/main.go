// Command approval is Keel's approval Lambda function: records the AwaitApproval task token on the approval (and answers it at once if the decision came first).
// Wiring only; the function is built by entry.NewApproval (internal/entry).
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/keelrun/keel/internal/entry"
)

func main() {
	ctx := context.Background()
	deps, log, err := entry.Load(ctx, os.Getenv, "lambda/approval")
	if err != nil {
		log.Error("approval: init failed", "err", err)
		os.Exit(1)
	}
	fn, err := entry.NewApproval(ctx, deps)
	if err != nil {
		log.Error("approval: init failed", "err", err)
		os.Exit(1)
	}
	lambda.Start(fn.Handle)
}
