package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/harness/harnesstest"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// sub is a sub-agent tool.
type sub struct {
	name string
	del  tool.Delegation
}

func (d sub) Info() tool.Info {
	return tool.Info{Name: d.name, Description: "hand work to " + d.del.Agent, Schema: json.RawMessage(tool.DelegationSchema), Mode: run.ModeSafeReadonly}
}
func (d sub) Run(context.Context, tool.Call) (tool.Result, error) {
	return tool.Result{}, errors.New("a sub-agent tool is never run")
}
func (d sub) Delegation() tool.Delegation { return d.del }

// kids implements harness.Children over the test store; started records
// every StartRun.
type kids struct {
	st      *sqlite.Store
	mu      sync.Mutex
	started []string
}

func (k *kids) CreateRun(ctx context.Context, r run.Run) (run.Run, bool, error) {
	return k.st.CreateRun(ctx, r)
}
func (k *kids) StartRun(_ context.Context, id string) error {
	k.mu.Lock()
	k.started = append(k.started, id)
	k.mu.Unlock()
	return nil
}
func (k *kids) CancelRun(ctx context.Context, id, by string) error {
	_, _, err := k.st.RequestCancel(ctx, id, by)
	if errors.Is(err, store.ErrTerminal) {
		return nil
	}
	return err
}

// priced gives every answer of m a cost.
type priced struct {
	model.Model
	cost int64
}

func (p priced) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	resp, err := p.Model.Generate(ctx, req)
	resp.CostMicroUSD = p.cost
	return resp, err
}

func subCalls(tool string, inputs ...string) string {
	var calls []string
	for _, in := range inputs {
		calls = append(calls, fmt.Sprintf(`{"name":%q,"args":{"input":%q}}`, tool, in))
	}
	return `{"tool_calls":[` + strings.Join(calls, ",") + `]}`
}

// children lists the runs that sub-agent calls of parent started.
func (e *env) children(parent string) []run.Run {
	e.T.Helper()
	page, err := e.Store.ListRuns(e.Ctx, store.ListRunsQuery{Parent: parent})
	if err != nil {
		e.T.Fatal(err)
	}
	return page.Runs
}

func TestSubAgentsFanOutAndAnswer(t *testing.T) {
	e := newEnv(t)
	k := &kids{st: e.Store}
	to := ledger()
	agents := e.Agent("coord", `{"turns":[`+subCalls("delegate_writer", "part A")+`,`+subCalls("delegate_checker", "part B")+`],"final":"all done"}`,
		sub{"delegate_writer", tool.Delegation{Agent: "writer"}}, sub{"delegate_checker", tool.Delegation{Agent: "checker", Limits: run.Limits{MaxTokens: 5000}}})
	for n, a := range e.Agent("writer", `{"turns":[],"final":"A is written"}`) {
		agents[n] = a
	}
	for n, a := range e.Agent("checker", `{"turns":[{"tool_calls":[{"name":"note","args":{"text":"checked B"}}]}],"final":"B is checked"}`,
		harnesstest.Note{Mode: run.ModeMutating, To: to}) {
		agents[n] = a
	}
	h := e.Harness(nil, agents, func(o *harness.Options) { o.Children = k })
	p := e.CreateRun("coord", "s1", nil)

	d, err := h.Step(e.Ctx, p.ID, time.Minute)
	if err != nil || d.Next != harness.NextWait || !strings.Contains(d.Error, "waiting for child runs") {
		t.Fatalf("first step: %+v %v", d, err)
	}
	kidsOf := e.children(p.ID)
	if len(kidsOf) != 1 || kidsOf[0].Agent != "writer" {
		t.Fatalf("children after the first answer: %+v", kidsOf)
	}
	w := kidsOf[0]
	if w.Caller.RunID != p.ID || w.Caller.Depth != 1 || w.Caller.OperationID == "" || w.ID != run.ChildRunID(p.ID, w.Caller.OperationID) {
		t.Fatalf("lineage %+v of %s", w.Caller, w.ID)
	}
	if w.SessionID == p.SessionID {
		t.Fatal("the child shares its parent's session without InheritGrants")
	}
	// The parent's Step while its child runs changes nothing and waits again.
	if d, err := h.Step(e.Ctx, p.ID, time.Minute); err != nil || d.Next != harness.NextWait {
		t.Fatalf("step while the child runs: %+v %v", d, err)
	}
	if d := e.StepUntil(h, w.ID); d.Next != harness.NextDone {
		t.Fatalf("writer: %+v", d)
	}
	// Second answer: the checker, whose effect asks for approval.
	if d, err := h.Step(e.Ctx, p.ID, time.Minute); err != nil || d.Next != harness.NextWait {
		t.Fatalf("parent after the writer: %+v %v", d, err)
	}
	var checker run.Run
	for _, c := range e.children(p.ID) {
		if c.Agent == "checker" {
			checker = c
		}
	}
	if checker.ID == "" || checker.Limits.MaxTokens != 5000 {
		t.Fatalf("checker %+v (limits narrowed to 5000 tokens)", checker)
	}
	if d := e.StepUntil(h, checker.ID); d.Next != harness.NextApproval {
		t.Fatalf("checker: %+v", d)
	}
	e.Decide(checker.ID, e.PendingApproval(checker.ID), true)
	if d := e.StepUntil(h, checker.ID); d.Next != harness.NextDone {
		t.Fatalf("checker after approval: %+v", d)
	}
	if d := e.StepUntil(h, p.ID); d.Next != harness.NextDone {
		t.Fatalf("parent: %+v", d)
	}
	items, err := e.Store.ListPlanItems(e.Ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	var answers []string
	for _, it := range items {
		answers = append(answers, string(it.Result))
	}
	all := strings.Join(answers, "\n")
	if !strings.Contains(all, "A is written") || !strings.Contains(all, "B is checked") {
		t.Fatalf("the parent's calls were answered %s", all)
	}
	evs := e.CheckGapless(p.ID)
	if count(evs, run.EventChildStarted) != 2 || count(evs, run.EventChildEnded) != 2 {
		t.Fatalf("child_started %d, child_ended %d", count(evs, run.EventChildStarted), count(evs, run.EventChildEnded))
	}
	if n := len(to.Entries()); n != 1 {
		t.Fatalf("the checker's effect happened %d times", n)
	}
	got, parentUsed := e.GetRun(p.ID), int64(0)
	for _, c := range e.children(p.ID) {
		parentUsed += c.Budget.TokensUsed
	}
	if got.Budget.TokensUsed <= parentUsed {
		t.Fatalf("the parent's tokens used %d do not include its children's %d", got.Budget.TokensUsed, parentUsed)
	}
}

func TestSubAgentsShareTheSpendCap(t *testing.T) {
	e := newEnv(t)
	k := &kids{st: e.Store}
	const capUSD = 1_000_000
	agents := e.Agent("coord", `{"turns":[`+subCalls("spend", "1", "2", "3", "4", "5")+`],"final":"done"}`,
		sub{"spend", tool.Delegation{Agent: "spender"}})
	// Each child tries to spend the whole cap: 40 calls of a tenth of it.
	sp := e.Agent("spender", `{"turns":[{"repeat":40,"tool_calls":[{"name":"echo","args":{"text":"x"}}]}],"final":"spent"}`, &echo{})["spender"]
	sp.Model = priced{Model: sp.Model, cost: capUSD / 10}
	agents["spender"] = sp
	h := e.Harness(nil, agents, func(o *harness.Options) { o.Children = k })
	p := e.CreateRun("coord", "s1", func(r *run.Run) { r.Limits.MaxSpendMicroUSD = capUSD })
	if d, err := h.Step(e.Ctx, p.ID, time.Minute); err != nil || d.Next != harness.NextWait {
		t.Fatalf("%+v %v", d, err)
	}
	kidsOf := e.children(p.ID)
	if len(kidsOf) != 5 {
		t.Fatalf("%d children, want 5", len(kidsOf))
	}
	var total int64
	for _, c := range kidsOf {
		if c.Limits.MaxSpendMicroUSD != capUSD/5 {
			t.Fatalf("child %s has a spend limit of %d, want a fifth of the cap", c.ID, c.Limits.MaxSpendMicroUSD)
		}
		if d := e.StepUntil(h, c.ID); d.Next != harness.NextFailed || !strings.Contains(d.Error, "max_spend") {
			t.Fatalf("child: %+v", d)
		}
		total += e.GetRun(c.ID).Budget.SpendUsedMicroUSD
	}
	if d := e.StepUntil(h, p.ID); d.Next != harness.NextDone && d.Next != harness.NextFailed {
		t.Fatalf("parent: %+v", d)
	}
	got := e.GetRun(p.ID)
	t.Logf("spend: children %d micro-USD, parent recorded %d, cap %d", total, got.Budget.SpendUsedMicroUSD, capUSD)
	if total > capUSD || got.Budget.SpendUsedMicroUSD > capUSD || got.Budget.SpendUsedMicroUSD < total {
		t.Fatalf("children spent %d, the parent recorded %d, cap %d", total, got.Budget.SpendUsedMicroUSD, capUSD)
	}
	// The children's failures reached the parent's model as answers.
	items, _ := e.Store.ListPlanItems(e.Ctx, p.ID)
	for _, it := range items {
		if !strings.Contains(string(it.Result), "failed: budget exceeded: max_spend") {
			t.Fatalf("call answered %s", it.Result)
		}
	}
}

func TestSubAgentCancelCascades(t *testing.T) {
	e := newEnv(t)
	k := &kids{st: e.Store}
	ec := &echo{}
	agents := e.Agent("coord", `{"turns":[`+subCalls("work", "1", "2", "3")+`],"final":"done"}`,
		sub{"work", tool.Delegation{Agent: "worker"}})
	agents["worker"] = e.Agent("worker", `{"turns":[{"repeat":50,"tool_calls":[{"name":"echo","args":{"text":"x"}}]}],"final":"w"}`, ec)["worker"]
	h := e.Harness(nil, agents, func(o *harness.Options) { o.Children = k })
	p := e.CreateRun("coord", "s1", nil)
	if d, err := h.Step(e.Ctx, p.ID, time.Minute); err != nil || d.Next != harness.NextWait {
		t.Fatalf("%+v %v", d, err)
	}
	kidsOf := e.children(p.ID)
	if len(kidsOf) != 3 {
		t.Fatalf("%d children", len(kidsOf))
	}
	// Each child runs a little: one short Step each.
	for _, c := range kidsOf {
		if _, err := h.Step(e.Ctx, c.ID, time.Nanosecond); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := e.Store.RequestCancel(e.Ctx, p.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	if d := e.StepUntil(h, p.ID); d.Next != harness.NextCancelled {
		t.Fatalf("parent: %+v", d)
	}
	before := ec.calls.Load()
	for _, c := range kidsOf {
		if got := e.GetRun(c.ID); !got.CancelRequested {
			t.Fatalf("child %s not asked to cancel", c.ID)
		}
		if d := e.StepUntil(h, c.ID); d.Next != harness.NextCancelled {
			t.Fatalf("child: %+v", d)
		}
	}
	if n := ec.calls.Load(); n != before {
		t.Fatalf("children ran %d tool calls after the cancel", n-before)
	}
}

func TestSubAgentCancelReachesALateChild(t *testing.T) {
	// A child created after its parent was cancelled (the cancel raced the
	// start) stops at its first Step: it reads its parent.
	e := newEnv(t)
	ec := &echo{}
	h := e.Harness(nil, e.Agent("worker", `{"turns":[{"repeat":5,"tool_calls":[{"name":"echo","args":{"text":"x"}}]}],"final":"w"}`, ec), nil)
	p := e.CreateRun("worker", "s1", nil)
	if _, _, err := e.Store.RequestCancel(e.Ctx, p.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	c := e.CreateRun("worker", "s2", func(r *run.Run) {
		r.ID = run.ChildRunID(p.ID, "op_1")
		r.Caller = run.Caller{RunID: p.ID, OperationID: "op_1", Depth: 1}
	})
	if d := e.StepUntil(h, c.ID); d.Next != harness.NextCancelled || ec.calls.Load() != 0 {
		t.Fatalf("late child: %+v after %d calls", d, ec.calls.Load())
	}
}

func TestSubAgentLimits(t *testing.T) {
	e := newEnv(t)
	k := &kids{st: e.Store}
	agents := e.Agent("coord", `{"turns":[`+subCalls("work", "1", "2", "3")+`],"final":"done"}`, sub{"work", tool.Delegation{Agent: "coord"}})
	h := e.Harness(nil, agents, func(o *harness.Options) { o.Children = k; o.MaxChildFanOut = 2; o.MaxChildDepth = 1 })
	p := e.CreateRun("coord", "s1", nil)
	if d, err := h.Step(e.Ctx, p.ID, time.Minute); err != nil || d.Next != harness.NextWait {
		t.Fatalf("%+v %v", d, err)
	}
	items, _ := e.Store.ListPlanItems(e.Ctx, p.ID)
	var refused string
	for _, it := range items {
		if it.Status == run.PlanFailed {
			refused += string(it.Result)
		}
	}
	if !strings.Contains(refused, "max child fan-out") || len(e.children(p.ID)) != 2 {
		t.Fatalf("fan-out: %d children, refused %s", len(e.children(p.ID)), refused)
	}
	// A child at the depth limit cannot start its own.
	c := e.children(p.ID)[0]
	if _, err := h.Step(e.Ctx, c.ID, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := len(e.children(c.ID)); n != 0 {
		t.Fatalf("a child at the depth limit started %d children", n)
	}
	citems, _ := e.Store.ListPlanItems(e.Ctx, c.ID)
	if len(citems) == 0 || !strings.Contains(string(citems[0].Result), "max child depth") {
		t.Fatalf("depth: %+v", citems)
	}
}

// TestSubAgentCannotRaisePastItsShare: a child whose agent pauses at its
// limits, started with its share of a parent's tool calls, fails at that
// share instead of asking a person for more (a raise would be spent past
// the parent's limit); its budget_exceeded event says why, and the parent
// ends within its own limit.
func TestSubAgentCannotRaisePastItsShare(t *testing.T) {
	e := newEnv(t)
	k := &kids{st: e.Store}
	ec := &echo{}
	agents := e.Agent("coord", `{"turns":[`+subCalls("work", "do it")+`],"final":"done"}`, sub{"work", tool.Delegation{Agent: "worker"}})
	w := e.Agent("worker", `{"turns":[{"repeat":8,"tool_calls":[{"name":"echo","args":{"text":"x"}}]}],"final":"worked"}`, ec)["worker"]
	w.OnLimit = harness.LimitPolicy{Pause: true}
	agents["worker"] = w
	h := e.Harness(nil, agents, func(o *harness.Options) { o.Children = k })
	p := e.CreateRun("coord", "s1", func(r *run.Run) { r.Limits.MaxToolCalls = 4 })
	if d, err := h.Step(e.Ctx, p.ID, time.Minute); err != nil || d.Next != harness.NextWait {
		t.Fatalf("%+v %v", d, err)
	}
	c := e.children(p.ID)[0]
	// Were the child to pause, a person approves every raise it asks.
	d := e.StepUntil(h, c.ID)
	for i := 0; d.Next == harness.NextApproval && i < 10; i++ {
		e.Decide(c.ID, e.PendingApproval(c.ID), true)
		d = e.StepUntil(h, c.ID)
	}
	if d.Next != harness.NextFailed || !strings.Contains(d.Error, "share of that run's budget") {
		t.Fatalf("child: %+v, want failed at its share", d)
	}
	var why string
	for _, ev := range e.CheckGapless(c.ID) {
		if ev.Type == run.EventBudgetExceeded {
			why = string(ev.Data)
		}
	}
	if !strings.Contains(why, p.ID) || !strings.Contains(why, "max_tool_calls") {
		t.Fatalf("the child's budget_exceeded says %s", why)
	}
	if aps, err := e.Store.ListApprovals(e.Ctx, c.ID); err != nil || len(aps) != 0 {
		t.Fatalf("the child asked for raises: %+v %v", aps, err)
	}
	e.StepUntil(h, p.ID)
	got := e.GetRun(p.ID)
	if got.Budget.ToolCallsUsed > got.Limits.MaxToolCalls {
		t.Fatalf("the parent used %d tool calls against its limit of %d", got.Budget.ToolCallsUsed, got.Limits.MaxToolCalls)
	}
}
