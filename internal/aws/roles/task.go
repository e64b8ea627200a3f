package roles

// The long-running task (Fargate on AWS, a child process under `keel
// dev`): the same harness as the step Lambda, without the 15-minute bound,
// for runs that spilled.
//
// Contract: the task heartbeats its task token while it works; it steps the
// run until a decision other than "continue", and hands that decision back
// with SendTaskSuccess, so the state machine routes it exactly as a Step
// result. On SIGTERM (a deploy, a scale-in) it stops after the current
// step — whose commit releases the lease — and returns "continue", so the
// state machine goes on in a fresh step. A harness error is returned with
// SendTaskFailure under its type name, which Retry/Catch match.
import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/keelrun/keel/internal/aws/lambdaerr"
	"github.com/keelrun/keel/internal/kernel/harness"
)

// StepOnly is the part of the harness the task uses.
type StepOnly interface {
	Step(ctx context.Context, runID string, budget time.Duration) (harness.Decision, error)
}

// HeartbeatTokens is the Step Functions task-token API the task uses.
type HeartbeatTokens interface {
	TaskTokens
	SendTaskHeartbeat(ctx context.Context, token string) error
}

// TaskConfig configures one task run.
type TaskConfig struct {
	Harness   StepOnly
	Tokens    HeartbeatTokens
	RunID     string
	TaskToken string
	// StepBudget bounds each Step, so a stop request is honoured within
	// about that long (default 20s, under ECS's default 30s stop timeout).
	StepBudget time.Duration
	// Heartbeat is the interval of SendTaskHeartbeat (default 30s; the
	// state machine's HeartbeatSeconds must be larger).
	Heartbeat time.Duration
	Logger    *slog.Logger
}

// RunTask steps the run until a decision or until stop is closed, and
// reports the outcome through the task token. It returns an error only when
// the outcome could not be reported.
func RunTask(ctx context.Context, cfg TaskConfig, stop <-chan struct{}) error {
	if cfg.RunID == "" || cfg.TaskToken == "" {
		return errors.New("task: run id and task token are required (KEEL_RUN_ID, KEEL_TASK_TOKEN)")
	}
	if cfg.StepBudget <= 0 {
		cfg.StepBudget = 20 * time.Second
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	log := cfg.Logger.With("run_id", cfg.RunID)
	hbCtx, stopHB := context.WithCancel(ctx)
	defer stopHB()
	go func() {
		t := time.NewTicker(cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-hbCtx.Done():
				return
			case <-t.C:
				if err := cfg.Tokens.SendTaskHeartbeat(hbCtx, cfg.TaskToken); err != nil {
					log.Warn("heartbeat failed", "err", err)
				}
			}
		}
	}()
	for {
		d, err := cfg.Harness.Step(ctx, cfg.RunID, cfg.StepBudget)
		if err != nil {
			stopHB()
			log.Error("step failed", "err", err)
			return cfg.Tokens.SendTaskFailure(context.WithoutCancel(ctx), cfg.TaskToken, lambdaerr.Type(err), err.Error())
		}
		stopping := false
		select {
		case <-stop:
			stopping = true
		default:
		}
		if d.Next != harness.NextContinue || stopping {
			stopHB()
			out, _ := json.Marshal(d)
			log.Info("task done", "next", d.Next, "stopping", stopping)
			if err := cfg.Tokens.SendTaskSuccess(context.WithoutCancel(ctx), cfg.TaskToken, string(out)); err != nil {
				return fmt.Errorf("task: report decision: %w", err)
			}
			return nil
		}
	}
}
