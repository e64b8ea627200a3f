package entry

import (
	"context"
	"errors"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/awswire"
	"github.com/keelrun/keel/internal/handlers"
	"github.com/keelrun/keel/internal/harness"
	"github.com/keelrun/keel/internal/model"
	"github.com/keelrun/keel/internal/model/provider"
	"github.com/keelrun/keel/internal/setup"
	"github.com/keelrun/keel/internal/states/sfnclient"
)

// StepFunctions is the Step Functions API the entrypoints use:
// *sfnclient.Client on AWS, the same client on `keel dev`'s endpoint in
// tests.
type StepFunctions interface {
	sfnclient.Starter
	sfnclient.Tokens
}

var _ StepFunctions = (*sfnclient.Client)(nil)

// Deps are what every entrypoint is built from.
type Deps struct {
	Env      Env
	Backends setup.Backends
	SFN      StepFunctions
	Logger   *slog.Logger
}

// AWSDeps wires env to AWS through cfg: the DynamoDB store and S3
// artifacts (internal/awswire), the Step Functions client, and the model
// providers (internal/model/provider: API keys from the environment or
// Secrets Manager, Bedrock on cfg).
func AWSDeps(env Env, cfg aws.Config, log *slog.Logger) (Deps, error) {
	sfn, err := awswire.SFN(cfg)
	if err != nil {
		return Deps{}, err
	}
	b := awswire.Backends(cfg, awswire.Options{S3PathStyle: env.S3PathStyle, Logger: log})
	getenv := env.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	b.NewModel = func(ctx context.Context, spec string) (model.Model, error) {
		return provider.New(ctx, spec, provider.Deps{Getenv: getenv, AWS: &cfg,
			Secrets: secretsmanager.NewFromConfig(cfg), Logger: log})
	}
	return Deps{Env: env, Backends: b, SFN: sfn, Logger: log}, nil
}

func (d Deps) logger() *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger
}

// open opens the store, the artifact store and the agents.
func (d Deps) open(ctx context.Context) (*setup.Parts, error) {
	if d.SFN == nil {
		return nil, errors.New("entry: no Step Functions client")
	}
	return d.Env.Setup.Open(ctx, d.Backends)
}

func (d Deps) harness(p *setup.Parts, canSpill bool) (*harness.Harness, error) {
	return harness.New(harness.Options{Store: p.Store, Artifacts: p.Artifacts, Agents: p.Agents,
		Owner: d.Env.Setup.Owner, CanSpill: canSpill, Logger: d.logger()})
}

// closer releases the parts a function opened.
type closer struct{ parts *setup.Parts }

// Close releases the store. Lambda never calls it; tests do.
func (c closer) Close() error { return c.parts.Close() }

// API is functions/api: the HTTP API behind API Gateway.
type API struct {
	Gateway
	closer
}

// NewAPI builds the API function: internal/api on the store, starting runs
// with StartExecution (name = run id) on Env.StateMachineARN and waking
// approval waits through their task tokens. The principal is the API
// Gateway authorizer's (see [Principal]).
func NewAPI(ctx context.Context, d Deps) (*API, error) {
	if d.Env.StateMachineARN == "" {
		return nil, errors.New("KEEL_STATE_MACHINE_ARN is required by the api function")
	}
	p, err := d.open(ctx)
	if err != nil {
		return nil, err
	}
	agents := api.AgentSet{}
	for name := range p.Agents {
		agents[name] = true
	}
	h, err := api.New(api.Deps{
		Store: p.Store, Artifacts: p.Artifacts,
		Starter:           handlers.Starter{Executions: awswire.Executions{Starter: d.SFN}, StateMachineARN: d.Env.StateMachineARN},
		Resumer:           handlers.Resumer{Tokens: d.SFN},
		Auth:              api.ContextPrincipal{},
		Agents:            agents,
		Logger:            d.logger(),
		MaxStreamDuration: d.Env.StreamMax,
	})
	if err != nil {
		p.Close()
		return nil, err
	}
	return &API{Gateway: Gateway{Handler: h}, closer: closer{p}}, nil
}

// Handle implements the Lambda handler (payload format 2.0).
func (a *API) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return a.Gateway.Handle(ctx, req)
}

// Step is functions/step: harness iterations until a decision or the
// Lambda's time budget (its deadline less Env.StepMargin). It may spill a
// run to the Fargate task.
type Step struct {
	handlers.Step
	closer
}

// NewStep builds the step function.
func NewStep(ctx context.Context, d Deps) (*Step, error) {
	p, err := d.open(ctx)
	if err != nil {
		return nil, err
	}
	h, err := d.harness(p, true)
	if err != nil {
		p.Close()
		return nil, err
	}
	return &Step{Step: handlers.Step{Harness: h, Budget: handlers.LambdaBudget(d.Env.StepMargin)}, closer: closer{p}}, nil
}

// Approval is functions/approval: it stores the AwaitApproval task token
// on the approval, and answers it at once when the decision came first.
type Approval struct {
	handlers.Approval
	closer
}

// NewApproval builds the approval function.
func NewApproval(ctx context.Context, d Deps) (*Approval, error) {
	p, err := d.open(ctx)
	if err != nil {
		return nil, err
	}
	return &Approval{Approval: handlers.Approval{Store: p.Store, Tokens: d.SFN}, closer: closer{p}}, nil
}

// Finalize is functions/finalize: the run's final status, output and error.
type Finalize struct {
	handlers.Finalize
	closer
}

// NewFinalize builds the finalize function.
func NewFinalize(ctx context.Context, d Deps) (*Finalize, error) {
	p, err := d.open(ctx)
	if err != nil {
		return nil, err
	}
	h, err := d.harness(p, false)
	if err != nil {
		p.Close()
		return nil, err
	}
	return &Finalize{Finalize: handlers.Finalize{Harness: h}, closer: closer{p}}, nil
}

// Schedule is functions/schedule: an EventBridge Scheduler occurrence
// creates one run (idempotent per scheduled time) and starts it.
type Schedule struct {
	handlers.Schedule
	closer
}

// NewSchedule builds the schedule function.
func NewSchedule(ctx context.Context, d Deps) (*Schedule, error) {
	if d.Env.StateMachineARN == "" {
		return nil, errors.New("KEEL_STATE_MACHINE_ARN is required by the schedule function")
	}
	p, err := d.open(ctx)
	if err != nil {
		return nil, err
	}
	return &Schedule{Schedule: handlers.Schedule{Store: p.Store, DefaultOwner: d.Env.ScheduleOwner,
		Starter: handlers.Starter{Executions: awswire.Executions{Starter: d.SFN}, StateMachineARN: d.Env.StateMachineARN}},
		closer: closer{p}}, nil
}
