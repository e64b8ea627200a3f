package harness_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// judging is a tool.Judged: registered as a read, it runs in each run
// as modes[runID] says, and its judgement fails for a run modes lacks
// (a server that does not answer).
type judging struct {
	readonly
	modes map[string]run.Mode
}

func (j judging) Judge(_ context.Context, runID string) (tool.Tool, error) {
	m, ok := j.modes[runID]
	if !ok {
		return nil, errors.New("the server does not answer")
	}
	return moded{j.readonly, m}, nil
}

// moded is a read of a given mode.
type moded struct {
	readonly
	mode run.Mode
}

func (m moded) Info() tool.Info { i := m.readonly.Info(); i.Mode = m.mode; return i }

// TestJudgedToolPerRun: one registered tool, three runs, three
// judgements: the harness plans, permits and runs each run's call under
// its own (a read runs at once; a confirm_once read asks a person first;
// a failed judgement fails the call, which never runs), not under the
// mode the registry holds.
func TestJudgedToolPerRun(t *testing.T) {
	e := newEnv(t)
	var ran atomic.Int64
	j := judging{readonly: readonly{name: "peek", do: func() (tool.Result, error) {
		ran.Add(1)
		return tool.Result{Content: "seen"}, nil
	}}, modes: map[string]run.Mode{}}
	h := e.Harness(nil, e.Agent("a", `{"turns":[{"tool_calls":[{"name":"peek","args":{}}]}],"final":"done"}`, j), nil)
	read, ask, down := e.CreateRun("a", "ses_1", nil), e.CreateRun("a", "ses_1", nil), e.CreateRun("a", "ses_1", nil)
	j.modes[read.ID], j.modes[ask.ID] = run.ModeSafeReadonly, run.ModeConfirmOnce

	if d := e.StepUntil(h, read.ID); d.Next != harness.NextDone || ran.Load() != 1 {
		t.Fatalf("judged a read: %s, ran %d times, want done after 1", d.Next, ran.Load())
	}
	if d := e.StepUntil(h, ask.ID); d.Next != harness.NextApproval || ran.Load() != 1 {
		t.Fatalf("judged confirm_once: %s, ran %d times, want an approval before it runs", d.Next, ran.Load())
	}
	if ap := e.PendingApproval(ask.ID); ap.Mode != run.ModeConfirmOnce || ap.Tool != "peek" {
		t.Errorf("approval %+v, want peek confirm_once", ap)
	}
	if d := e.StepUntil(h, down.ID); d.Next != harness.NextDone || ran.Load() != 1 {
		t.Fatalf("a failed judgement: %s, ran %d times, want done without running", d.Next, ran.Load())
	}
	failed := false
	for _, ev := range e.Events(down.ID) {
		failed = failed || (ev.Type == run.EventToolFailed && strings.Contains(string(ev.Data), "the server does not answer"))
	}
	if !failed {
		t.Error("the failed judgement is in no tool_failed event")
	}
}
