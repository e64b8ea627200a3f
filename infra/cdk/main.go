package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	os.Exit(run())
}

// run synthesizes the app; it returns instead of exiting so the jsii
// kernel (a Node.js child process) is always shut down.
func run() int {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	dir, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "keel cdk:", err)
		return 1
	}
	cfg, err := configFromContext(func(key string) any { return app.Node().TryGetContext(jsii.String(key)) }, dir)
	if err == nil {
		err = cfg.Props.Validate()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "keel cdk: invalid configuration:\n%v\n", err)
		return 1
	}
	props := cfg.Props.withDefaults()
	fmt.Fprintf(os.Stderr, "keel cdk: building %s %s for linux/arm64 into %s\n", CtxApp, props.App, props.AppDir())
	if err := BuildApp(context.Background(), props); err != nil {
		fmt.Fprintf(os.Stderr, "keel cdk: building the app failed:\n%v\n", err)
		return 1
	}
	if props.CommandRunner {
		if err := BuildCommandRunner(context.Background(), props); err != nil {
			fmt.Fprintf(os.Stderr, "keel cdk: building the command runner failed:\n%v\n", err)
			return 1
		}
	}
	NewKeelStack(app, cfg.StackName, cfg.Props)
	app.Synth(nil)
	return 0
}
