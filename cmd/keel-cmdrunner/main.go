// Command keel-cmdrunner is the AWS command runner: a Lambda function
// (provided.al2023) that runs one agent command in a run's workspace and
// holds nothing (internal/aws/cmdrunner, docs/aws-sandbox.md). Its
// execution role grants only its log group; the workspace comes and goes
// through presigned URLs in each request.
//
// Invoked as `keel-cmdrunner __keel-prlimit --cpu=... -- argv` it is the
// limiter the runner starts commands through (cmdrunner.Prlimit).
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/keelrun/keel/internal/aws/cmdrunner"
	"github.com/keelrun/keel/internal/sandbox"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == cmdrunner.PrlimitCommand {
		err := cmdrunner.Prlimit(os.Args[2:])
		fmt.Fprintln(os.Stderr, err)
		os.Exit(127)
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "keel-cmdrunner:", err)
		os.Exit(1)
	}
}

func run() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ctx := context.Background()
	sb, err := sandbox.New(ctx, sandbox.Config{Bare: true, Prlimit: self, PrlimitArgs: []string{cmdrunner.PrlimitCommand}})
	if err != nil {
		return err
	}
	root := os.Getenv("KEEL_COMMAND_ROOT") // tests; Lambda: /tmp is the only writable place
	if root == "" {
		root = filepath.Join(os.TempDir(), "keel-command")
	}
	r := &cmdrunner.Runner{Root: root, Sandbox: sb, HTTP: &http.Client{Timeout: 15 * time.Minute}}
	lambda.Start(r.Handle)
	return nil
}
