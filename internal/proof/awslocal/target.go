package awslocal

import (
	"context"
	"net"
)

// Target is the AWS look-alike a World deploys stacks into: what differs
// between moto with one aws-lambda-rie sandbox per function (MotoTarget)
// and LocalStack running the functions in its own Lambda containers
// (LocalStackTarget). Everything else — the resources made from the
// template, the AWS API calls that make them, Lambda Invoke, the Step
// Functions history, the scenarios and their assertions — is the same
// code on both, through the World's aws.Config and LambdaAPI, which point
// at the target's endpoint.
type Target interface {
	// Name is the target's short name ("moto", "localstack"), printed
	// beside every result.
	Name() string
	// Listen opens a TCP listener where the functions' code can connect:
	// the servers a scenario runs for the functions to call (the
	// publication service, Keel's executor as Step Functions) listen
	// there. Loopback for sandboxes on this host; the Docker bridge
	// gateway for LocalStack's Lambda containers.
	Listen() (net.Listener, error)
	// Package is CreateFunction's Code for the template's function
	// logical — code is the template's own Code property, resolved
	// (S3Bucket, S3Key of the CDK asset) — and the Lambda architecture
	// ("arm64", "x86_64") the package is built for.
	Package(ctx context.Context, t *Template, logical string, code map[string]any) (map[string]any, string, error)
	// FunctionEnv is what the target adds to every function's
	// configured environment: the Step Functions endpoint when the stack
	// runs Keel's executor (sfnURL, "" for the target's own interpreter).
	FunctionEnv(sfnURL string) map[string]string
	// Started is called once CreateFunction has succeeded; fn can be
	// invoked when it returns nil. spec is the function as created.
	Started(ctx context.Context, fn *Function, spec FunctionSpec) error
	// Kill ends a function's code in the middle of an invocation, the
	// way kind says, and tells what it killed. The target's Lambda
	// answers the pending Invoke with an error and serves later Invokes
	// from a new environment.
	Kill(ctx context.Context, fn *Function, kind KillKind) (string, error)
	// KillErrors are the error names the Step state may see for an
	// invocation killed that way (the scenario wants one of them among
	// the execution's retried failures).
	KillErrors(kind KillKind) []string
	// Stop releases what Started acquired for fn.
	Stop(fn *Function)
	// Unsupported says why a scenario cannot be played on this target,
	// or "" when it can.
	Unsupported(scenario string) string
	// Close stops the target's servers (what the World started).
	Close()
}

// KillKind is what is killed mid-step.
type KillKind string

const (
	// KillSandbox takes the whole execution environment (a lost host):
	// the emulator and the bootstrap, or the Lambda container.
	KillSandbox KillKind = "sandbox"
	// KillRuntime takes only the runtime process (the bootstrap), as an
	// out-of-memory kill does; the environment stays.
	KillRuntime KillKind = "runtime"
)

// FunctionSpec is one function as a stack creates it: its physical name,
// the limits Lambda gives its sandbox, and its configured environment
// (template, deploy options and FunctionEnv).
type FunctionSpec struct {
	Name      string
	Timeout   any // as the template says (a number)
	Memory    any
	Variables map[string]any
	// SFNURL is the Step Functions endpoint of the stack (the target's
	// own, or Keel's executor).
	SFNURL string
	// Program is StackOptions.Program: the package the function runs,
	// "" for ./cmd/keel.
	Program string
	// Version is the published version the sandbox serves ("":
	// $LATEST); a target whose Lambda runs versions itself ignores it.
	Version string
}

// subagentsScenarioName is the scenario that deploys a program of its own
// (examples/subagents), which only some targets can package.
const subagentsScenarioName = "subagents"
