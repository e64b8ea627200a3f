package compose

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/aws/apigw"
	"github.com/keelrun/keel/internal/aws/awsbackend"
	"github.com/keelrun/keel/internal/aws/roles"
	"github.com/keelrun/keel/internal/aws/sfnclient"
	"github.com/keelrun/keel/internal/aws/sweeper"
	"github.com/keelrun/keel/internal/config"
)

// StepFunctions is the Step Functions API the roles use: *sfnclient.Client
// on AWS, the same client on `keel dev`'s endpoint in tests.
type StepFunctions interface {
	sfnclient.Starter
	sfnclient.Tokens
	sfnclient.Describer
}

var _ StepFunctions = (*sfnclient.Client)(nil)

var errNoSFN = errors.New("compose: no Step Functions client")

// Deps are what every AWS role is built from: the one configuration, the
// app's agents, the backends and the Step Functions client.
type Deps struct {
	Config   config.Config
	App      App
	Backends Backends
	SFN      StepFunctions
	// Versions are the step function's published versions (the sweep
	// role, when KEEL_STEP_FUNCTION is set); nil: none are retired.
	Versions sweeper.Versions
	Logger   *slog.Logger
}

func (d Deps) logger() *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger
}

// open opens the runtime of one function; the function keeps it for the
// life of its Lambda sandbox.
func (d Deps) open(ctx context.Context) (*Runtime, error) {
	b := d.Backends
	if b.Logger == nil {
		b.Logger = d.logger()
	}
	return Open(ctx, d.Config, d.App, b)
}

// owner names this process in leases: KEEL_OWNER, else its role and a
// random suffix, so that two sandboxes never share one.
func (d Deps) owner(role string) string {
	if d.Config.Owner != "" {
		return d.Config.Owner
	}
	return role + "/" + randHex(6)
}

// closer releases the runtime a function opened.
type closer struct{ rt *Runtime }

// Close releases the store. Lambda never calls it; tests do.
func (c closer) Close() error { return c.rt.Close() }

// Flush exports the telemetry of the invocation that just ended.
func (c closer) Flush(ctx context.Context) error { return c.rt.Flush(ctx) }

func (d Deps) starter(rt *Runtime) roles.Starter {
	return roles.Starter{Executions: awsbackend.Executions{Starter: d.SFN}, StateMachineARN: rt.Config.StateMachineARN,
		Statuses: awsbackend.SweepExecutions{Client: d.SFN, StateMachineARN: rt.Config.StateMachineARN}}
}

// API is the api role: the HTTP API behind API Gateway.
type API struct {
	apigw.Gateway
	closer
}

// NewAPI builds the api role: internal/api on the store, starting runs
// with StartExecution (name = run id) on KEEL_STATE_MACHINE_ARN and waking
// approval waits through their task tokens. The principal is the API
// Gateway authorizer's (see apigw.Principal).
func NewAPI(ctx context.Context, d Deps) (*API, error) {
	if d.SFN == nil {
		return nil, errNoSFN
	}
	if d.Config.StateMachineARN == "" {
		return nil, errors.New("KEEL_STATE_MACHINE_ARN is required by the api role")
	}
	rt, err := d.open(ctx)
	if err != nil {
		return nil, err
	}
	auth := api.ContextPrincipal{}
	h, err := api.New(api.Deps{
		Store: rt.Store, Artifacts: rt.Artifacts,
		Starter:           d.starter(rt),
		Resumer:           roles.Resumer{Tokens: d.SFN},
		Auth:              auth,
		Agents:            rt.Catalog,
		Logger:            d.logger(),
		MaxStreamDuration: rt.Config.StreamMax,
		Records:           rt.Store, BundleEnv: rt.BundleEnv(),
		Deployment: Reporter{Runtime: rt, Executor: "aws-stepfunctions"},
		Secrets:    rt.Secrets,
		Versions:   rt,
	})
	if err != nil {
		rt.Close()
		return nil, err
	}
	h = MountMCP(h, auth, rt.Config, rt.BundleEnv().Version, d.logger())
	return &API{Gateway: apigw.Gateway{Handler: h}, closer: closer{rt}}, nil
}

// Handle implements the Lambda handler (payload format 2.0).
func (a *API) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return a.Gateway.Handle(ctx, req)
}

// Step is the step role: harness iterations until a decision or the
// Lambda's time budget (its deadline less KEEL_STEP_MARGIN). It may spill
// a run to the Fargate task.
type Step struct {
	roles.Step
	closer
}

// NewStep builds the step role.
func NewStep(ctx context.Context, d Deps) (*Step, error) {
	rt, err := d.open(ctx)
	if err != nil {
		return nil, err
	}
	h, err := rt.Harness(d.owner("lambda/step"), true)
	if err != nil {
		rt.Close()
		return nil, err
	}
	// Child runs are not started from here: the step role neither links
	// nor is granted states:StartExecution (bench/lambda's link check);
	// the sweeper starts a created child's execution.
	step := roles.Step{Harness: h, Budget: roles.LambdaBudget(rt.Config.StepMargin)}
	if self := rt.Config.LambdaVersion; self != "" {
		if err := rt.recordHomes(ctx, self, d.logger()); err != nil {
			rt.Close()
			return nil, err
		}
		step.Self, step.Place = self, placement{rt: rt}
	}
	return &Step{Step: step, closer: closer{rt}}, nil
}

// Approval is the approval role: it stores the AwaitApproval task token
// on the approval, and answers it at once when the decision came first.
type Approval struct {
	roles.Approval
	closer
}

// NewApproval builds the approval role.
func NewApproval(ctx context.Context, d Deps) (*Approval, error) {
	if d.SFN == nil {
		return nil, errNoSFN
	}
	rt, err := d.open(ctx)
	if err != nil {
		return nil, err
	}
	return &Approval{Approval: roles.Approval{Store: rt.Store, Tokens: d.SFN}, closer: closer{rt}}, nil
}

// Finalize is the finalize role: the run's final status, output and error,
// and the debug bundle of a run that failed or needs a person — written on
// AWS exactly as under keel dev, since both are built here.
type Finalize struct {
	roles.Finalize
	closer
}

// NewFinalize builds the finalize role.
func NewFinalize(ctx context.Context, d Deps) (*Finalize, error) {
	rt, err := d.open(ctx)
	if err != nil {
		return nil, err
	}
	h, err := rt.Harness(d.owner("lambda/finalize"), false)
	if err != nil {
		rt.Close()
		return nil, err
	}
	return &Finalize{Finalize: rt.Finalizer(h), closer: closer{rt}}, nil
}

// Finalizer is the Finalize handler every composition uses: it writes the
// debug bundle of a run that failed or needs a person.
func (rt *Runtime) Finalizer(h roles.Stepper) roles.Finalize {
	return roles.Finalize{Harness: h, Records: rt.Store, Artifacts: rt.Artifacts, Env: rt.BundleEnv(), Logger: rt.Logger}
}

// Schedule is the schedule role: an EventBridge Scheduler occurrence
// creates one run (idempotent per scheduled time) and starts it.
type Schedule struct {
	roles.Schedule
	closer
}

// NewSchedule builds the schedule role.
func NewSchedule(ctx context.Context, d Deps) (*Schedule, error) {
	if d.SFN == nil {
		return nil, errNoSFN
	}
	if d.Config.StateMachineARN == "" {
		return nil, errors.New("KEEL_STATE_MACHINE_ARN is required by the schedule role")
	}
	rt, err := d.open(ctx)
	if err != nil {
		return nil, err
	}
	return &Schedule{Schedule: roles.Schedule{Store: rt.Store, DefaultOwner: rt.Config.ScheduleOwner,
		Starter: d.starter(rt), Agents: rt.Catalog}, closer: closer{rt}}, nil
}

// RunTask is the task role: it steps Config.RunID without the 15-minute
// bound, heartbeating Config.TaskToken, until a decision, and reports the
// decision with SendTaskSuccess (a harness error with SendTaskFailure
// under its type name). Closing stop (SIGTERM) ends it after the current
// step, whose commit releases the lease, with "continue". It returns an
// error only when the outcome could not be reported.
func RunTask(ctx context.Context, d Deps, tokens roles.HeartbeatTokens, stop <-chan struct{}) error {
	rt, err := d.open(ctx)
	if err != nil {
		if d.Config.TaskToken != "" {
			_ = tokens.SendTaskFailure(ctx, d.Config.TaskToken, "TaskSetupError", err.Error())
		}
		return err
	}
	defer rt.Close()
	h, err := rt.Harness(d.owner("fargate"), false) // child runs: started by the sweeper, as in the step role
	if err != nil {
		return err
	}
	return roles.RunTask(ctx, roles.TaskConfig{Harness: h, Tokens: tokens, RunID: rt.Config.RunID,
		TaskToken: rt.Config.TaskToken, Logger: d.logger()}, stop)
}

// Sweeper is the sweeper every composition uses, on this runtime's store,
// finalizing through fin (the harness).
func (rt *Runtime) Sweeper(x sweeper.Executions, fin sweeper.Finalizer, wake sweeper.Waker) *sweeper.Sweeper {
	return &sweeper.Sweeper{Store: rt.Store, Executions: x, Finalizer: fin, Wake: wake, MinAge: rt.Config.SweepMinAge, Logger: rt.Logger}
}

// Sweep is the sweep role: an EventBridge schedule invokes it, and each
// invocation compares every unfinished run with its executions on
// KEEL_STATE_MACHINE_ARN and repairs what it finds (package sweeper).
type Sweep struct {
	*sweeper.Sweeper
	closer
}

// NewSweep builds the sweep role.
func NewSweep(ctx context.Context, d Deps) (*Sweep, error) {
	if d.SFN == nil {
		return nil, errNoSFN
	}
	if d.Config.StateMachineARN == "" {
		return nil, errors.New("KEEL_STATE_MACHINE_ARN is required by the sweep role")
	}
	rt, err := d.open(ctx)
	if err != nil {
		return nil, err
	}
	h, err := rt.Harness(d.owner("lambda/sweep"), false)
	if err != nil {
		rt.Close()
		return nil, err
	}
	x := awsbackend.SweepExecutions{Client: d.SFN, StateMachineARN: rt.Config.StateMachineARN}
	sw := rt.Sweeper(x, h, roles.Resumer{Tokens: d.SFN})
	if d.Versions != nil {
		sw.Retirement = rt.retirement(d.Versions)
	}
	return &Sweep{Sweeper: sw, closer: closer{rt}}, nil
}

// Handle implements the schedule's target: one sweep; the event itself is
// ignored. It fails only when the runs could not be listed.
func (s *Sweep) Handle(ctx context.Context, _ json.RawMessage) (sweeper.Report, error) {
	return s.Sweep(ctx)
}
