package harness_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// sameIDs gives every tool call of m's answers one id, as a faulty
// provider (or a hostile proxy) might.
type sameIDs struct {
	model.Model
	id string
}

func (s sameIDs) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	resp, err := s.Model.Generate(ctx, req)
	for i := range resp.ToolCalls {
		resp.ToolCalls[i].ID = s.id
	}
	return resp, err
}

// TestDuplicateToolCallIDs: calls that share an id — within one answer
// and with an earlier answer — each run once and get their own answer
// under an id made unique, recorded in model_call_completed; sub-agent
// calls sharing one start one child each, and each child's use is added
// to its parent's once.
func TestDuplicateToolCallIDs(t *testing.T) {
	t.Run("tool calls", func(t *testing.T) {
		e := newEnv(t)
		ec := &echo{}
		agents := e.Agent("a", `{"turns":[{"tool_calls":[{"name":"echo","args":{"text":"first"}},{"name":"echo","args":{"text":"second"}}]},`+
			`{"tool_calls":[{"name":"echo","args":{"text":"third"}}]}],"final":"done"}`, ec)
		a := agents["a"]
		a.Model = sameIDs{Model: a.Model, id: "toolu_1"}
		agents["a"] = a
		h := e.Harness(nil, agents, nil)
		r := e.CreateRun("a", "s1", nil)
		if d := e.StepUntil(h, r.ID); d.Next != harness.NextDone {
			t.Fatalf("%+v", d)
		}
		if n := ec.calls.Load(); n != 3 {
			t.Fatalf("echo ran %d times, want 3 (one per call)", n)
		}
		items, err := e.Store.ListPlanItems(e.Ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]string{}
		for _, it := range items {
			ids[it.CallID] = string(it.Result)
		}
		if len(items) != 3 || !strings.Contains(ids["toolu_1"], "first") || !strings.Contains(ids["toolu_1_2"], "second") ||
			!strings.Contains(ids["toolu_1_3"], "third") {
			t.Fatalf("plan items by call id: %v", ids)
		}
		var renamed int
		for _, ev := range e.CheckGapless(r.ID) {
			if ev.Type == run.EventModelCallCompleted && strings.Contains(string(ev.Data), `"renamed_call_ids"`) {
				renamed++
			}
		}
		if renamed != 2 {
			t.Fatalf("%d model_call_completed events record renamed ids, want 2", renamed)
		}
	})
	t.Run("sub-agent calls", func(t *testing.T) {
		e := newEnv(t)
		k := &kids{st: e.Store}
		agents := e.Agent("coord", `{"turns":[`+subCalls("work", "part A", "part B")+`],"final":"all done"}`,
			sub{"work", tool.Delegation{Agent: "worker"}})
		c := agents["coord"]
		c.Model = sameIDs{Model: c.Model, id: "toolu_1"}
		agents["coord"] = c
		for n, a := range e.Agent("worker", `{"turns":[],"final":"worked"}`) {
			agents[n] = a
		}
		h := e.Harness(nil, agents, func(o *harness.Options) { o.Children = k })
		p := e.CreateRun("coord", "s1", nil)
		if d, err := h.Step(e.Ctx, p.ID, time.Minute); err != nil || d.Next != harness.NextWait {
			t.Fatalf("%+v %v", d, err)
		}
		kidsOf := e.children(p.ID)
		if len(kidsOf) != 2 {
			t.Fatalf("%d children, want one per call", len(kidsOf))
		}
		var childTokens int64
		for _, c := range kidsOf {
			if d := e.StepUntil(h, c.ID); d.Next != harness.NextDone {
				t.Fatalf("child: %+v", d)
			}
			childTokens += e.GetRun(c.ID).Budget.TokensUsed
		}
		if d := e.StepUntil(h, p.ID); d.Next != harness.NextDone {
			t.Fatalf("parent: %+v", d)
		}
		var own, ended int64
		for _, ev := range e.CheckGapless(p.ID) {
			switch ev.Type {
			case run.EventModelCallCompleted:
				own += tokensOf(t, ev)
			case run.EventChildEnded:
				ended++
			}
		}
		if got := e.GetRun(p.ID).Budget.TokensUsed; ended != 2 || got != own+childTokens {
			t.Fatalf("parent used %d tokens, want its own %d + its children's %d once (child_ended %d)", got, own, childTokens, ended)
		}
	})
}

// tokensOf is the usage a model_call_completed event records.
func tokensOf(t *testing.T, ev run.Event) int64 {
	t.Helper()
	var d struct{ Usage model.Usage }
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		t.Fatal(err)
	}
	return d.Usage.Total()
}
