package explain_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/model/scripted"
	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
	"github.com/keelrun/keel/internal/observe/explain"
	"github.com/keelrun/keel/internal/observe/telemetry"
)

// flakyPublish is publish (it promises nothing) whose first dispatch never
// answers and whose later ones succeed.
type flakyPublish struct {
	publish
	sends atomic.Int32
}

func (p *flakyPublish) Dispatch(context.Context, run.Operation) (ops.Outcome, error) {
	if p.sends.Add(1) == 1 {
		return ops.Outcome{}, errors.New("POST https://blog.example/posts: context deadline exceeded")
	}
	return ops.Outcome{ExternalID: "post_2"}, nil
}

// settledRun plays a run to needs_human on a destination that promises
// nothing, settles its operation with outcome, and plays it to its end.
func settledRun(t *testing.T, outcome store.SettleOutcome) (needsHuman, ended telemetry.Bundle) {
	t.Helper()
	w := newWorld(t)
	sm, err := scripted.Parse([]byte(`{"turns":[
		{"tool_calls":[{"name":"publish","args":{"text":"release notes"}}],"usage":{"input_tokens":500,"output_tokens":60}},
		{"text":"published"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	m := model.NewTransport(sm, model.TransportOptions{Sleep: func(context.Context, time.Duration) error { return nil }})
	reg, err := tool.NewRegistry(&flakyPublish{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := harness.New(harness.Options{Store: w.store, Agents: harness.AgentMap{"builder": {Name: "builder", Model: m, Tools: reg}},
		Owner: "test-worker", Clock: w.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := w.store.CreateRun(w.ctx, run.Run{ID: run.NewID("run"), SessionID: "s1", Owner: "alice", Agent: "builder",
		Request: "publish the notes", InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	play := func() {
		for range 20 {
			d, err := h.Step(w.ctx, r.ID, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			switch d.Next {
			case harness.NextApproval:
				ap, err := w.store.GetApproval(w.ctx, r.ID, d.ApprovalID)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := w.store.DecideApproval(w.ctx, store.Decision{RunID: r.ID, ApprovalID: ap.ID, Approve: true, ArgsHash: ap.ArgsHash, DecidedBy: "bob"}); err != nil {
					t.Fatal(err)
				}
			case harness.NextContinue, harness.NextWait:
			default:
				return
			}
		}
	}
	play()
	if needsHuman, err = telemetry.Collect(w.ctx, w.store, r.ID); err != nil {
		t.Fatal(err)
	}
	if needsHuman.Run.Status != run.StatusNeedsHuman || len(needsHuman.Operations) != 1 {
		t.Fatalf("run %s with operations %+v, want needs_human over one", needsHuman.Run.Status, needsHuman.Operations)
	}
	s := store.Settlement{RunID: r.ID, OperationID: needsHuman.Operations[0].ID, Outcome: outcome, By: "carol", Reason: "checked the blog's admin"}
	if outcome == store.SettleHappened {
		s.ExternalID = "post_1"
	}
	if _, err := w.store.SettleOperation(w.ctx, s); err != nil {
		t.Fatal(err)
	}
	play()
	if ended, err = telemetry.Collect(w.ctx, w.store, r.ID); err != nil {
		t.Fatal(err)
	}
	return needsHuman, ended
}

// TestExplainSettled: a person's settlement is part of the story: the
// op_settled decision, the second dispatch after --not-happened (not a
// "repeated call"), no failed call for an operation settled as happened;
// and a run waiting on a destination that promises nothing is not told
// to look the operation up by its idempotency key, which it cannot be.
func TestExplainSettled(t *testing.T) {
	waiting, happened := settledRun(t, store.SettleHappened)
	s := explain.Of(waiting)
	if len(s.Next) == 0 || strings.Contains(s.Next[0].Why, "look it up by its idempotency key") ||
		!strings.Contains(s.Next[0].Why, "promises no lookup") {
		t.Errorf("the next move on a destination that promises nothing: %+v", s.Next)
	}

	s = explain.Of(happened)
	if s.Status != run.StatusCompleted {
		t.Fatalf("status %s\n%s", s.Status, s.Text)
	}
	if !strings.Contains(s.Text, "carol settled operation op_") || !strings.Contains(s.Text, "as happened: checked the blog's admin") {
		t.Errorf("the story leaves out the settlement:\n%s", s.Text)
	}
	for _, ts := range s.Spend.ByTool {
		if ts.Tool == "publish" && (ts.Failed != 0 || ts.Calls != 1) {
			t.Errorf("publish: %d calls, %d failed; want 1 call, none failed (a person settled it as happened)\n%s", ts.Calls, ts.Failed, s.Text)
		}
	}

	_, again := settledRun(t, store.SettleNotHappened)
	s = explain.Of(again)
	if s.Status != run.StatusCompleted {
		t.Fatalf("status %s\n%s", s.Status, s.Text)
	}
	for _, w := range []string{"as not happened: checked the blog's admin", "dispatched operation op_", "again (attempt 2, same operation id)"} {
		if !strings.Contains(s.Text, w) {
			t.Errorf("the story lacks %q:\n%s", w, s.Text)
		}
	}
	if len(s.Spend.Repeats) != 0 || strings.Contains(s.Text, "repeated call") {
		t.Errorf("the re-send after not-happened is told as a repeated call: %+v\n%s", s.Spend.Repeats, s.Text)
	}
}
