package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/backend/store/dynamo"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/model/scripted"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

type countingTool struct{ calls atomic.Int64 }

func (c *countingTool) Info() tool.Info {
	return tool.Info{Name: "work", Mode: run.ModeSafeReadonly, Description: "work",
		Schema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}
}
func (c *countingTool) Run(context.Context, tool.Call) (tool.Result, error) {
	c.calls.Add(1)
	return tool.Result{Content: "ok"}, nil
}

type subTool struct{}

func (subTool) Info() tool.Info {
	return tool.Info{Name: "delegate", Mode: run.ModeSafeReadonly, Description: "delegate", Schema: json.RawMessage(tool.DelegationSchema)}
}
func (subTool) Run(context.Context, tool.Call) (tool.Result, error) {
	return tool.Result{}, errors.New("never run")
}
func (subTool) Delegation() tool.Delegation { return tool.Delegation{Agent: "worker"} }

type dynChildren struct{ s *dynamo.Store }

func (d dynChildren) CreateRun(ctx context.Context, r run.Run) (run.Run, bool, error) {
	return d.s.CreateRun(ctx, r)
}
func (d dynChildren) StartRun(context.Context, string) error { return nil }
func (d dynChildren) CancelRun(ctx context.Context, id, by string) error {
	_, _, err := d.s.RequestCancel(ctx, id, by)
	if errors.Is(err, store.ErrTerminal) {
		return nil
	}
	return err
}

func scriptedModel(t *testing.T, script string) model.Model {
	t.Helper()
	m, err := scripted.Parse([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	return model.Direct(m)
}

// TestSubAgentCancelOnDynamoDB: on the DynamoDB store, a parent with three
// running children is cancelled; all three are cancelled and run nothing
// afterwards.
func TestSubAgentCancelOnDynamoDB(t *testing.T) {
	ep := startEndpoint(t)
	arts, _ := ep.artifacts(t, nil)
	st, err := dynamo.New(ep.ddb(nil), dynamo.Options{Table: ep.newTable(t), Artifacts: arts})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	work := &countingTool{}
	coord, _ := tool.NewRegistry(subTool{})
	wreg, _ := tool.NewRegistry(work)
	agents := harness.AgentMap{
		"coord": {Name: "coord", Model: scriptedModel(t, `{"turns":[{"tool_calls":[`+
			`{"name":"delegate","args":{"input":"1"}},{"name":"delegate","args":{"input":"2"}},{"name":"delegate","args":{"input":"3"}}]}],"final":"done"}`),
			Tools: coord, MaxTokens: 100},
		"worker": {Name: "worker", Model: scriptedModel(t, `{"turns":[{"repeat":50,"tool_calls":[{"name":"work","args":{"n":1}}]}],"final":"w"}`),
			Tools: wreg, MaxTokens: 100},
	}
	h, err := harness.New(harness.Options{Store: st, Artifacts: arts, Agents: agents, Owner: "test", Children: dynChildren{st}})
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "s1", Owner: "alice", Agent: "coord", Request: "go", Limits: run.DefaultLimits()})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := h.Step(ctx, p.ID, time.Minute); err != nil || d.Next != harness.NextWait {
		t.Fatalf("parent: %+v %v", d, err)
	}
	page, err := st.ListRuns(ctx, store.ListRunsQuery{Parent: p.ID})
	if err != nil || len(page.Runs) != 3 {
		t.Fatalf("children %d %v", len(page.Runs), err)
	}
	for _, c := range page.Runs {
		if _, err := h.Step(ctx, c.ID, time.Nanosecond); err != nil {
			t.Fatal(err)
		}
	}
	if work.calls.Load() == 0 {
		t.Fatal("the children ran nothing before the cancel")
	}
	if _, _, err := st.RequestCancel(ctx, p.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	if d, err := h.Step(ctx, p.ID, time.Minute); err != nil || d.Next != harness.NextCancelled {
		t.Fatalf("parent after cancel: %+v %v", d, err)
	}
	before := work.calls.Load()
	for _, c := range page.Runs {
		d, err := h.Step(ctx, c.ID, time.Minute)
		if err != nil || d.Next != harness.NextCancelled {
			t.Fatalf("child %s: %+v %v", c.ID, d, err)
		}
		if got, _ := st.GetRun(ctx, c.ID); got.Status != run.StatusCancelled || !strings.HasPrefix(got.Caller.RunID, "run_") {
			t.Fatalf("child %s is %s", c.ID, got.Status)
		}
	}
	if n := work.calls.Load() - before; n != 0 {
		t.Fatalf("children ran %d calls after the cancel", n)
	}
}
