// Package roles holds what each role of a Keel binary does, apart from the
// HTTP API (internal/api): the task handlers of stepfunctions/run.asl.json
// — Step, Approval and Finalize —, the EventBridge schedule handler, the
// long-running task ([RunTask]), and the seams the API uses to start and
// resume runs. On AWS the one binary serves them with lambda.Start (and as
// the Fargate task); `keel dev` registers the very same functions with the
// local States-Language executor (after a JSON round trip), so both paths
// run identical code.
//
// Payloads carry ids only; everything else is read from the store, so a
// handler can run on any worker, any number of times.
package roles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/observe/telemetry"
	"github.com/keelrun/keel/stepfunctions"
)

// TaskTokens sends a decision back to a Step Functions wait.
type TaskTokens interface {
	SendTaskSuccess(ctx context.Context, token, output string) error
	SendTaskFailure(ctx context.Context, token, errName, cause string) error
}

// ApprovalStore is what the approval handler needs.
type ApprovalStore interface {
	AttachTaskToken(ctx context.Context, runID, approvalID, token string) (run.Approval, error)
}

// ApprovalInput is the AwaitApproval task's payload.
type ApprovalInput struct {
	RunID      string `json:"run_id"`
	ApprovalID string `json:"approval_id"`
	TaskToken  string `json:"task_token"`
}

// Approval stores the wait's task token on the approval. If a person
// already decided (the decision raced ahead of the token), it resumes the
// wait at once; otherwise the API resumes it when the decision arrives.
type Approval struct {
	Store  ApprovalStore
	Tokens TaskTokens
}

// Handle implements the AwaitApproval task.
func (a Approval) Handle(ctx context.Context, in ApprovalInput) (json.RawMessage, error) {
	if in.RunID == "" || in.ApprovalID == "" || in.TaskToken == "" {
		return nil, fmt.Errorf("approval: run_id, approval_id and task_token are required")
	}
	ap, err := a.Store.AttachTaskToken(ctx, in.RunID, in.ApprovalID, in.TaskToken)
	if err != nil {
		return nil, &harness.RetryableError{Err: fmt.Errorf("attach task token: %w", err)}
	}
	if ap.Status != run.ApprovalPending {
		if err := Resume(ctx, a.Tokens, ap); err != nil {
			return nil, &harness.RetryableError{Err: err}
		}
	}
	return json.RawMessage(`{"attached":true}`), nil
}

// Resume sends an approval's outcome through its task token. The state
// machine goes back to Step either way: the harness reads the decision
// from the store, never from the token's output.
func Resume(ctx context.Context, tokens TaskTokens, ap run.Approval) error {
	if ap.TaskToken == "" || ap.Status == run.ApprovalPending {
		return nil
	}
	out, _ := json.Marshal(map[string]string{"approval_id": ap.ID, "status": string(ap.Status)})
	err := tokens.SendTaskSuccess(ctx, ap.TaskToken, string(out))
	if err != nil && isTokenGone(err) {
		// The wait already ended (timed out, or resumed by a racing call):
		// nothing is waiting for this token any more.
		return nil
	}
	return err
}

func isTokenGone(err error) bool {
	s := err.Error()
	return strings.Contains(s, "TaskTimedOut") || strings.Contains(s, "TaskDoesNotExist") || strings.Contains(s, "InvalidToken")
}

// Resumer adapts Resume to the API's seam.
type Resumer struct{ Tokens TaskTokens }

// Resume implements api.Resumer.
func (r Resumer) Resume(ctx context.Context, ap run.Approval) error { return Resume(ctx, r.Tokens, ap) }

// FinalizeInput is the Finalize task's payload.
type FinalizeInput struct {
	RunID    string           `json:"run_id"`
	Decision harness.Decision `json:"decision"`
	Error    *StatesError     `json:"error"`
}

// StatesError is what a Catch puts at its ResultPath.
type StatesError struct {
	Error string `json:"Error"`
	Cause string `json:"Cause"`
}

// FinalizeOutput tells the state machine how the execution ends.
type FinalizeOutput struct {
	Status run.Status `json:"status"`
	Failed bool       `json:"failed"`
	// DebugBundle is the artifact path of the debug bundle, when written.
	DebugBundle string `json:"debug_bundle,omitempty"`
}

// Finalize records the final status of a run the state machine is done
// with, and for a run that failed or needs a person writes the debug bundle
// (package telemetry) when Records and Artifacts are set.
type Finalize struct {
	Harness   Stepper
	Records   telemetry.Records
	Artifacts artifact.Store
	// Env is what the bundle's env.txt says of this deployment.
	Env    telemetry.Env
	Logger *slog.Logger
}

// Handle implements the Finalize task.
func (f Finalize) Handle(ctx context.Context, in FinalizeInput) (FinalizeOutput, error) {
	if in.RunID == "" {
		return FinalizeOutput{}, errors.New("finalize: run_id is empty")
	}
	msg := in.Decision.Error
	if in.Error != nil && in.Error.Error != "" {
		msg = in.Error.Text()
	}
	if in.Decision.Next == harness.NextFailed && msg == "" {
		msg = "failed"
	}
	if in.Error == nil && in.Decision.Next != harness.NextFailed {
		msg = ""
	}
	r, err := f.Harness.Finalize(ctx, in.RunID, msg)
	if err != nil {
		return FinalizeOutput{}, err
	}
	out := FinalizeOutput{Status: r.Status, Failed: r.Status == run.StatusFailed}
	if f.Records != nil && f.Artifacts != nil {
		if _, err := writeAuditHead(ctx, f.Artifacts, r); err != nil && !errors.Is(err, artifact.ErrExists) && f.Logger != nil {
			f.Logger.Warn("audit head not written", "run_id", in.RunID, "err", err)
		}
	}
	if (r.Status == run.StatusFailed || r.Status == run.StatusNeedsHuman) && f.Records != nil && f.Artifacts != nil {
		info, err := telemetry.Write(ctx, f.Records, f.Artifacts, in.RunID, f.Env)
		if err != nil && !errors.Is(err, artifact.ErrExists) {
			// The run's records are intact; only their summary is missing.
			if f.Logger != nil {
				f.Logger.Warn("debug bundle not written", "run_id", in.RunID, "err", err)
			}
		} else {
			out.DebugBundle = info.Key.Path()
		}
	}
	return out, nil
}

// Executions starts state machine executions.
type Executions interface {
	StartExecution(ctx context.Context, stateMachineARN, name, input string) error
}

// Starter starts a run's execution: the name is the run id, so starting
// twice is the same execution (Step Functions refuses a second one).
type Starter struct {
	Executions      Executions
	StateMachineARN string
	// Statuses, when set, lets ContinueRun wait out an execution that is
	// ending (continue.go); nil: a running one counts as driving the run.
	Statuses ExecutionStatuses
}

// StartRun implements api.Starter. An execution that already exists
// under the run's first name counts as started, running or closed: it is
// this run's (the name is the run id), and the closed one of a finished
// run must not make a repeated create fail (Step Functions answers
// ExecutionAlreadyExists for a closed execution, even with the same
// input). A run whose first execution closed before the run ended is the
// sweeper's to repair, as on AWS.
func (s Starter) StartRun(ctx context.Context, runID string) error {
	// The sweeper starts a stored run the same way (name and input), so
	// the two starts are one execution.
	err := s.Executions.StartExecution(ctx, s.StateMachineARN, stepfunctions.ExecutionName(runID, 0), stepfunctions.ExecutionInput(runID, 0))
	if err != nil && isAlreadyStarted(err) {
		return nil
	}
	return err
}

// RunCreator is what the schedule handler needs.
type RunCreator interface {
	CreateRun(ctx context.Context, r run.Run) (run.Run, bool, error)
}

// ScheduleEvent is the payload an EventBridge Scheduler target is given
// (set as the schedule's Input): the run to start, and the scheduled time
// from the <aws.scheduler.scheduled-time> context attribute. The schedule
// is named by schedule_name, or by schedule_arn (the
// <aws.scheduler.schedule-arn> attribute) when the name is absent.
type ScheduleEvent struct {
	ScheduleName  string          `json:"schedule_name"`
	ScheduleARN   string          `json:"schedule_arn,omitempty"`
	ScheduledTime string          `json:"scheduled_time"`
	Owner         string          `json:"owner"`
	Agent         string          `json:"agent"`
	Input         string          `json:"input"`
	SessionID     string          `json:"session_id,omitempty"`
	Limits        json.RawMessage `json:"limits,omitempty"`
}

// Schedule creates one run per scheduled time: a redelivered event finds
// the same run (its client key is the schedule name and time).
type Schedule struct {
	Store   RunCreator
	Starter interface {
		StartRun(ctx context.Context, runID string) error
	}
	// DefaultOwner owns runs whose event names no owner; empty makes the
	// owner required.
	DefaultOwner string
	// Agents, when set, refuses an event naming an unknown agent and
	// gives the agent's defaults to the run; nil: Keel's defaults.
	Agents api.Agents
}

// Handle implements the schedule target.
func (s Schedule) Handle(ctx context.Context, ev ScheduleEvent) (map[string]string, error) {
	if ev.ScheduleName == "" && ev.ScheduleARN != "" {
		// arn:aws:scheduler:REGION:ACCOUNT:schedule/GROUP/NAME
		ev.ScheduleName = ev.ScheduleARN[strings.LastIndex(ev.ScheduleARN, "/")+1:]
	}
	if ev.Owner == "" {
		ev.Owner = s.DefaultOwner
	}
	switch {
	case ev.ScheduleName == "":
		return nil, errors.New("schedule: schedule_name (or schedule_arn) is empty")
	case ev.ScheduledTime == "":
		return nil, errors.New("schedule: scheduled_time is empty")
	case ev.Agent == "" || ev.Owner == "" || ev.Input == "":
		return nil, errors.New("schedule: agent, owner and input are required")
	}
	if _, err := time.Parse(time.RFC3339, ev.ScheduledTime); err != nil {
		return nil, fmt.Errorf("schedule: scheduled_time %q: %w", ev.ScheduledTime, err)
	}
	var lim run.Limits
	if len(ev.Limits) > 0 {
		if err := json.Unmarshal(ev.Limits, &lim); err != nil {
			return nil, fmt.Errorf("schedule: limits: %w", err)
		}
	}
	var defaults api.AgentDefaults
	if s.Agents != nil {
		d, ok := s.Agents.Agent(ev.Agent)
		if !ok {
			return nil, fmt.Errorf("schedule: unknown agent %q", ev.Agent)
		}
		defaults = d
	}
	limits, policy := defaults.Apply(lim, "", time.Now())
	// The ARN, when given, names the schedule across groups.
	id := ev.ScheduleName
	if ev.ScheduleARN != "" {
		id = ev.ScheduleARN
	}
	session := ev.SessionID
	if session == "" {
		session = "sched-" + ev.ScheduleName
	}
	r := run.Run{ID: run.NewID("run"), SessionID: session, Owner: ev.Owner, Agent: ev.Agent,
		ClientKey: "schedule:" + id + "@" + ev.ScheduledTime, Request: ev.Input,
		InputPolicy: policy, Limits: limits, TraceParent: run.NewTraceParent()}
	stored, _, err := s.Store.CreateRun(ctx, r)
	if err != nil {
		if errors.Is(err, store.ErrInvalid) {
			return nil, fmt.Errorf("schedule: %w", err)
		}
		return nil, &harness.RetryableError{Err: err}
	}
	if err := s.Starter.StartRun(ctx, stored.ID); err != nil && !isAlreadyStarted(err) {
		return nil, &harness.RetryableError{Err: err}
	}
	return map[string]string{"run_id": stored.ID}, nil
}

func isAlreadyStarted(err error) bool {
	return strings.Contains(err.Error(), "ExecutionAlreadyExists")
}
