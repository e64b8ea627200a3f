// Package config is Keel's one configuration: every variable any role
// reads — `keel dev`, the local task child, each Lambda role, the Fargate
// task, `keel step` — is read here, once, by [FromEnv], into one [Config]
// from which internal/compose builds every role. A role never reads the
// environment itself, so two roles cannot disagree on what a variable
// means, and a bad value is refused at start with an error naming the
// variable.
//
// Command-line flags (`keel dev --data-dir`, `--store`, ...) are applied by
// the CLI on top of the Config FromEnv returns, then [Config.Validate]
// checks the result.
package config

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/backend/model/provider"
	"github.com/keelrun/keel/internal/faults"
)

// Roles a Keel binary can play, named by KEEL_ROLE. The Lambda roles run
// under the Lambda Runtime API; RoleTask is the long-running task (Fargate
// on AWS, a child process of `keel dev`).
const (
	RoleAPI      = "api"
	RoleStep     = "step"
	RoleApproval = "approval"
	RoleFinalize = "finalize"
	RoleSchedule = "schedule"
	RoleSweep    = "sweep"
	RoleTask     = "task"
)

// LambdaRoles are the roles deployed as Lambda functions.
var LambdaRoles = []string{RoleAPI, RoleStep, RoleApproval, RoleFinalize, RoleSchedule, RoleSweep}

// Config is everything the runtime is configured with. The zero value of
// a field means its documented default.
type Config struct {
	// Role is KEEL_ROLE: one of the Role* constants, or "" (a command
	// line: keel dev, keel step, the client commands).
	Role string

	// Store is KEEL_STORE: sqlite:PATH or dynamo:TABLE. Empty: dynamo:Table
	// when Table is set, else sqlite:DataDir/keel.db. See StoreURL.
	Store string
	// Artifacts is KEEL_ARTIFACTS: fs:DIR or s3:BUCKET. Empty: s3:Bucket
	// when Bucket is set, else fs:DataDir/artifacts.
	Artifacts string
	// Table and Bucket are KEEL_TABLE and KEEL_BUCKET, the names the CDK
	// stack gives its resources.
	Table, Bucket string
	// Model is KEEL_MODEL: when set, it replaces every agent's own model
	// (scripted:PATH, anthropic:MODEL, openai:MODEL, bedrock:MODEL_ID):
	// how an operator points a deployment at another model and how crash
	// tests replay a script.
	Model string
	// Models are the provider settings (keys, retries, timeouts, token
	// rate, prices: KEEL_MODEL_*, ANTHROPIC_*, OPENAI_*).
	Models provider.Settings
	// SpillTools is KEEL_SPILL_TOOLS: tools run in the long-running task.
	SpillTools []string
	// Prices is KEEL_PRICES: a JSON price table (internal/observe/cost.Load) that
	// `keel cost` prices a run with instead of the dated default.
	Prices string
	// ToolDelay is KEEL_TOOL_DELAY (tool=duration,...): holds read-only
	// tools before they run, for tests of calls in flight.
	ToolDelay map[string]time.Duration
	// Owner is KEEL_OWNER, this worker's name in leases; empty: one is
	// made per process from its role.
	Owner string
	// LogLevel is KEEL_LOG_LEVEL (debug, info, warn, error; default info).
	LogLevel slog.Level
	// FaultPoint is KEEL_FAULTPOINT (name[:nth]): the process SIGKILLs
	// itself there (crash tests). TaskFaultPoint (KEEL_TASK_FAULTPOINT)
	// is given to the long-running task children of keel dev instead.
	FaultPoint, TaskFaultPoint string

	// DataDir is KEEL_DATA_DIR (default .keel): keel dev's directory.
	DataDir string
	// Addr is KEEL_ADDR (default 127.0.0.1:8080): keel dev's address.
	Addr string
	// StepBudget (KEEL_STEP_BUDGET, default 60s) bounds one Step of keel
	// dev; LeaseTTL (KEEL_LEASE_TTL, default 30s) is how long its lease
	// outlives that budget.
	StepBudget, LeaseTTL time.Duration

	// StepFunction is KEEL_STEP_FUNCTION (sweep role): the step
	// function's live alias ARN, whose published versions the sweeper
	// retires once no live run uses them. Empty: nothing is retired.
	StepFunction string
	// StateMachineARN is KEEL_STATE_MACHINE_ARN (api and schedule roles).
	StateMachineARN string
	// StepMargin is KEEL_STEP_MARGIN (default 30s): time a Lambda step
	// keeps back from its deadline for its commit and answer.
	StepMargin time.Duration
	// StreamMax is KEEL_SSE_MAX_DURATION (default 5s, at most 30s): how long
	// one buffered SSE answer of the api function collects events.
	StreamMax time.Duration
	// SweepInterval is KEEL_SWEEP_INTERVAL (default 5m): how often keel
	// dev's sweeper compares runs with their executions (it also sweeps
	// once at start). On AWS the stack's schedule invokes the sweep role.
	SweepInterval time.Duration
	// SweepMinAge is KEEL_SWEEP_MIN_AGE (default 1m): the sweeper leaves
	// alone a run changed more recently than this (one being created and
	// started right now).
	SweepMinAge time.Duration
	// ScheduleOwner is KEEL_SCHEDULE_OWNER (default "scheduler"): owner of
	// scheduled runs whose event names none.
	ScheduleOwner string
	// RunID and TaskToken are KEEL_RUN_ID and KEEL_TASK_TOKEN: the run the
	// long-running task steps and the token it answers.
	RunID, TaskToken string
	// SFNEndpoint and SFNToken are KEEL_SFN_ENDPOINT and KEEL_SFN_TOKEN:
	// the local Step Functions endpoint keel dev gives its task children.
	// Empty: AWS Step Functions.
	SFNEndpoint, SFNToken string
	// S3PathStyle is set when AWS_ENDPOINT_URL or AWS_ENDPOINT_URL_S3 is:
	// S3-compatible servers want ENDPOINT/BUCKET addressing.
	S3PathStyle bool
	// LambdaVersion is NAME:N when this process serves a published
	// version of a Lambda function (AWS_LAMBDA_FUNCTION_NAME and
	// AWS_LAMBDA_FUNCTION_VERSION, which Lambda sets); empty elsewhere and
	// under $LATEST.
	LambdaVersion string
	// AWSEndpoint is AWS_ENDPOINT_URL, for messages.
	AWSEndpoint string
	// Notify is how notifications reach people (KEEL_NOTIFY_*).
	Notify Notify
	// OTel is the OpenTelemetry export (the standard OTEL_* variables);
	// off unless an OTLP endpoint is set.
	OTel OTel

	// WorkspaceRoot is KEEL_WORKSPACE_ROOT: where this worker keeps its
	// copies of runs' workspaces (a cache: the record is in the artifact
	// store). Empty: a directory under the system's temporary directory
	// named after the store (internal/runspace says why not the data dir).
	WorkspaceRoot string
	// Sandbox is KEEL_SANDBOX: "bubblewrap" (default) isolates agents'
	// commands with Linux namespaces and refuses to start where they are
	// missing; "unsafe" runs them as plain child processes of the worker,
	// with its files, environment and credentials (doctor reports it).
	Sandbox string
	// CommandRunner is KEEL_COMMAND_RUNNER: the name or ARN of the AWS
	// command runner function (infra/cdk sets it on the step function and
	// the task). Set, agents' commands run there instead of in a local
	// sandbox (docs/aws-sandbox.md).
	CommandRunner string
	// MCP is KEEL_MCP: what the API's MCP endpoint (/v1/mcp) offers.
	// "on" (default): start, follow and explain runs, send input; "off":
	// no endpoint; "decisions": also approve, deny and settle, which an
	// operator turns on knowingly, as the MCP client may be a model.
	MCP string
	// awsSecrets are AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, read
	// only to be masked (see Secrets); the AWS clients read their own.
	awsSecrets []string
}

// FromEnv reads every variable through getenv and checks each value. It
// does not check combinations that depend on the role: see Validate.
func FromEnv(getenv func(string) string) (Config, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	c := Config{
		Role:            get("KEEL_ROLE"),
		Store:           get("KEEL_STORE"),
		Artifacts:       get("KEEL_ARTIFACTS"),
		Table:           get("KEEL_TABLE"),
		Bucket:          get("KEEL_BUCKET"),
		Model:           get("KEEL_MODEL"),
		Owner:           get("KEEL_OWNER"),
		FaultPoint:      get("KEEL_FAULTPOINT"),
		TaskFaultPoint:  get("KEEL_TASK_FAULTPOINT"),
		DataDir:         get("KEEL_DATA_DIR"),
		Addr:            get("KEEL_ADDR"),
		StateMachineARN: get("KEEL_STATE_MACHINE_ARN"),
		StepFunction:    get("KEEL_STEP_FUNCTION"),
		ScheduleOwner:   get("KEEL_SCHEDULE_OWNER"),
		RunID:           get("KEEL_RUN_ID"),
		TaskToken:       get("KEEL_TASK_TOKEN"),
		SFNEndpoint:     get("KEEL_SFN_ENDPOINT"),
		SFNToken:        get("KEEL_SFN_TOKEN"),
		AWSEndpoint:     get("AWS_ENDPOINT_URL"),
		Prices:          get("KEEL_PRICES"),
		WorkspaceRoot:   get("KEEL_WORKSPACE_ROOT"),
		Sandbox:         get("KEEL_SANDBOX"),
		CommandRunner:   get("KEEL_COMMAND_RUNNER"),
		MCP:             get("KEEL_MCP"),
	}
	if err := c.checkChoices(); err != nil {
		return c, err
	}
	c.S3PathStyle = c.AWSEndpoint != "" || get("AWS_ENDPOINT_URL_S3") != ""
	if v := get("AWS_LAMBDA_FUNCTION_VERSION"); v != "" && v != "$LATEST" {
		c.LambdaVersion = get("AWS_LAMBDA_FUNCTION_NAME") + ":" + v
	}
	c.awsSecrets = []string{get("AWS_SECRET_ACCESS_KEY"), get("AWS_SESSION_TOKEN")}
	var err error
	if c.Models, err = provider.ParseSettings(getenv); err != nil {
		return c, err
	}
	if c.LogLevel, err = logLevel(get("KEEL_LOG_LEVEL")); err != nil {
		return c, err
	}
	if c.OTel, err = parseOTel(get); err != nil {
		return c, err
	}
	if c.Notify, err = parseNotify(get); err != nil {
		return c, err
	}
	for _, d := range []struct {
		name string
		to   *time.Duration
	}{
		{"KEEL_STEP_BUDGET", &c.StepBudget}, {"KEEL_LEASE_TTL", &c.LeaseTTL},
		{"KEEL_STEP_MARGIN", &c.StepMargin}, {"KEEL_SSE_MAX_DURATION", &c.StreamMax},
		{"KEEL_SWEEP_INTERVAL", &c.SweepInterval}, {"KEEL_SWEEP_MIN_AGE", &c.SweepMinAge},
	} {
		if *d.to, err = duration(d.name, get(d.name)); err != nil {
			return c, err
		}
	}
	if s := get("KEEL_TOOL_DELAY"); s != "" {
		c.ToolDelay = map[string]time.Duration{}
		for _, kv := range strings.Split(s, ",") {
			name, ds, ok := strings.Cut(strings.TrimSpace(kv), "=")
			d, err := time.ParseDuration(ds)
			if !ok || name == "" || err != nil || d < 0 {
				return c, fmt.Errorf("KEEL_TOOL_DELAY %q: want tool=duration[,tool=duration]", s)
			}
			c.ToolDelay[name] = d
		}
	}
	for _, t := range strings.Split(get("KEEL_SPILL_TOOLS"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			c.SpillTools = append(c.SpillTools, t)
		}
	}
	return c, c.Validate()
}

// StoreURL is the store the configuration names, defaults applied.
func (c Config) StoreURL() string {
	switch {
	case c.Store != "":
		return c.Store
	case c.Table != "":
		return "dynamo:" + c.Table
	}
	return "sqlite:" + filepath.Join(c.dataDir(), "keel.db")
}

// ArtifactsURL is the artifact store the configuration names, defaults
// applied.
func (c Config) ArtifactsURL() string {
	switch {
	case c.Artifacts != "":
		return c.Artifacts
	case c.Bucket != "":
		return "s3:" + c.Bucket
	}
	return "fs:" + filepath.Join(c.dataDir(), "artifacts")
}

// NeedsAWS reports whether the store or the artifacts are on AWS.
func (c Config) NeedsAWS() bool {
	return strings.HasPrefix(c.StoreURL(), "dynamo:") || strings.HasPrefix(c.ArtifactsURL(), "s3:")
}

func (c Config) dataDir() string {
	if c.DataDir == "" {
		return ".keel"
	}
	return c.DataDir
}

// Defaults returns c with every default filled in (what Validate checks
// and the roles use).
func (c Config) Defaults() Config {
	c.DataDir = c.dataDir()
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8080"
	}
	if c.StepBudget == 0 {
		c.StepBudget = 60 * time.Second
	}
	if c.StepMargin == 0 {
		c.StepMargin = 30 * time.Second
	}
	if c.StreamMax == 0 {
		c.StreamMax = 5 * time.Second
	}
	if c.ScheduleOwner == "" {
		c.ScheduleOwner = "scheduler"
	}
	if c.SweepInterval == 0 {
		c.SweepInterval = 5 * time.Minute
	}
	if c.SweepMinAge == 0 {
		c.SweepMinAge = time.Minute
	}
	c.Store, c.Artifacts = c.StoreURL(), c.ArtifactsURL()
	return c
}

// Validate checks every value and, for the AWS roles, what they need:
// every Lambda function and the Fargate task of a stack must share one
// DynamoDB table and one bucket. Errors name the variable.
func (c Config) Validate() error {
	kind := func(v string) (string, string) { k, a, _ := strings.Cut(v, ":"); return k, a }
	switch k, a := kind(c.StoreURL()); {
	case (k == "sqlite" || k == "dynamo") && a != "":
	default:
		return fmt.Errorf("KEEL_STORE %q: want sqlite:PATH or dynamo:TABLE", c.StoreURL())
	}
	switch k, a := kind(c.ArtifactsURL()); {
	case (k == "fs" || k == "s3") && a != "":
	default:
		return fmt.Errorf("KEEL_ARTIFACTS %q: want fs:DIR or s3:BUCKET", c.ArtifactsURL())
	}
	if _, err := faults.Parse(c.FaultPoint); err != nil {
		return err
	}
	if _, err := faults.Parse(c.TaskFaultPoint); err != nil {
		return fmt.Errorf("KEEL_TASK_FAULTPOINT: %w", err)
	}
	if c.StreamMax > 30*time.Second {
		return fmt.Errorf("KEEL_SSE_MAX_DURATION %s: API Gateway allows at most 30s", c.StreamMax)
	}
	switch c.Role {
	case "":
		return nil
	case RoleAPI, RoleStep, RoleApproval, RoleFinalize, RoleSchedule, RoleSweep:
	case RoleTask:
		if c.RunID == "" || c.TaskToken == "" {
			return fmt.Errorf("KEEL_RUN_ID and KEEL_TASK_TOKEN are required by the task role (RunOnFargate sets them)")
		}
	default:
		return fmt.Errorf("KEEL_ROLE %q: want one of %s or %s", c.Role, strings.Join(LambdaRoles, ", "), RoleTask)
	}
	if c.Role != RoleTask || c.SFNEndpoint == "" {
		// On AWS every function and task must see the same data.
		if !strings.HasPrefix(c.StoreURL(), "dynamo:") {
			return fmt.Errorf("KEEL_TABLE (or KEEL_STORE=dynamo:TABLE) is required by the %s role: every function must share one store, got %q", c.Role, c.StoreURL())
		}
		if !strings.HasPrefix(c.ArtifactsURL(), "s3:") {
			return fmt.Errorf("KEEL_BUCKET (or KEEL_ARTIFACTS=s3:BUCKET) is required by the %s role: every function must share one bucket, got %q", c.Role, c.ArtifactsURL())
		}
	}
	if (c.Role == RoleAPI || c.Role == RoleSchedule || c.Role == RoleSweep) && c.StateMachineARN == "" {
		return fmt.Errorf("KEEL_STATE_MACHINE_ARN is required by the %s role", c.Role)
	}
	return nil
}

// Faults parses FaultPoint (validated by FromEnv).
func (c Config) Faults() *faults.Points {
	p, err := faults.Parse(c.FaultPoint)
	if err != nil {
		p, _ = faults.Parse("")
	}
	return p
}

func duration(name, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s %q: want a positive duration such as 30s", name, s)
	}
	return d, nil
}
