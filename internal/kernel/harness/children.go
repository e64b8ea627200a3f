package harness

// Sub-agents: a tool.Delegating call starts a child run of another agent
// under the operation protocol, the parent waits for all the children of
// one model answer without holding a worker, and each child's outcome
// becomes its call's answer.
//
// Budget. A child's limits are its share of what its parent has left when
// it starts: the parent's remaining tokens, spend and tool calls divided
// by the sub-agent calls of the answer (narrowed by the sub-agent's own
// limits), and the parent's deadline. A parent spends nothing while its
// children run (it waits for all of them before its next model call), so
// the shares of one answer together never exceed what the parent had;
// when the children have ended, what each used is added to the parent's
// use in the commit that answers the calls, once, and the rest is the
// parent's again.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// deferredStarts is implemented by Children whose StartRun may leave a
// child stored but not started (no execution service here): a Step
// waiting for children then names those still created in its decision.
type deferredStarts interface {
	StartsDeferred() bool
}

// childSpec is a child's whole definition, recorded as its operation's
// arguments before the child exists: a start after a crash creates the
// same child, with the same share of the budget.
type childSpec struct {
	Agent   string     `json:"agent"`
	Input   string     `json:"input"`
	Session string     `json:"session"`
	Limits  run.Limits `json:"limits"`
}

// startChild records the intent of it's child run, then starts it.
func startChild(ctx context.Context, e *env, tr *transcript, pl *plan, cur *cursor, pend *pending, it run.PlanItem, dt tool.Delegating) (Decision, bool, error) {
	del := dt.Delegation()
	nth, n := -1, 0 // this call's place among the answer's sub-agent calls, and their number
	for _, tc := range tr.lastCalls() {
		if _, ok := e.tools.delegating(tc.Name); ok {
			if tc.ID == it.CallID {
				nth = n
			}
			n++
		}
	}
	not := "sub-agent " + del.Agent + " not started: "
	switch {
	case e.opt.Children == nil:
		refuseChild(tr, pend, it, not+"this worker cannot start child runs")
		return Decision{}, false, nil
	case e.run.Caller.Depth+1 > e.opt.MaxChildDepth:
		refuseChild(tr, pend, it, fmt.Sprintf("%srun %s is at depth %d and child runs nest at most %d deep (max child depth)", not, e.run.ID, e.run.Caller.Depth, e.opt.MaxChildDepth))
		return Decision{}, false, nil
	case nth >= e.opt.MaxChildFanOut:
		refuseChild(tr, pend, it, fmt.Sprintf("%sone answer may start at most %d sub-agents (max child fan-out) and this is call %d of %d", not, e.opt.MaxChildFanOut, nth+1, n))
		return Decision{}, false, nil
	}
	if lim := e.run.Limits.MaxToolCalls; lim > 0 && cur.inUse(pend.used()).ToolCalls+1 > lim {
		d, err := exceeded(ctx, e, tr, pl, pend, "max_tool_calls", lim, "")
		return d, true, err
	}
	var args tool.DelegationArgs
	if err := json.Unmarshal(it.Args, &args); err != nil {
		refuseChild(tr, pend, it, not+err.Error())
		return Decision{}, false, nil
	}
	limits, short := childShare(e, tr, pl, cur, pend, del, min(n, e.opt.MaxChildFanOut))
	if short != "" {
		refuseChild(tr, pend, it, fmt.Sprintf("%sthe run's remaining %s leaves no share for it", not, short))
		return Decision{}, false, nil
	}
	spec := childSpec{Agent: del.Agent, Input: args.Input, Limits: limits, Session: e.run.SessionID}
	if !del.InheritGrants {
		spec.Session = "sub_" + strings.TrimPrefix(run.ChildRunID(e.run.ID, opID(it)), "run_")
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return Decision{}, true, err
	}
	hash, err := run.ArgsHash(raw)
	if err != nil {
		return Decision{}, true, err
	}
	now := e.opt.Clock()
	op := run.Operation{ID: opID(it), RunID: e.run.ID, PlanItemID: it.ID, Tool: it.Tool, Destination: "subagent:" + del.Agent,
		Args: raw, ArgsHash: hash, Status: run.OpPending, Attempts: 1, CreatedAt: now, UpdatedAt: now}
	op.IdempotencyKey = op.ID
	it.Status = run.PlanRunning
	pend.item(it)
	pend.use(store.Amounts{ToolCalls: 1})
	pend.event(run.Event{Type: run.EventToolStarted, PlanItemID: it.ID, OperationID: op.ID, Data: jsonObj("tool", it.Tool)})
	pend.event(run.Event{Type: run.EventOpIntent, PlanItemID: it.ID, OperationID: op.ID, Data: mustJSON(map[string]any{
		"destination": op.Destination, "contract": "idempotent, lookup", "args_hash": op.ArgsHash})})
	e.opt.Faults.Hit(FaultBeforeIntent)
	if err := pend.flush(ctx, store.Commit{NewOperations: []run.Operation{op}}); err != nil {
		return Decision{}, true, err
	}
	e.opt.Faults.Hit(FaultAfterIntent)
	return spawn(ctx, e, pend, it, op)
}

// refuseChild answers a sub-agent call that starts nothing.
func refuseChild(tr *transcript, pend *pending, it run.PlanItem, msg string) {
	pend.event(run.Event{Type: run.EventToolFailed, PlanItemID: it.ID, Data: jsonObj("tool", it.Tool, "error", msg, "dispatched", false)})
	finishItem(pend, tr, it, run.PlanFailed, tool.Result{Content: msg}, true)
}

// childShare is a child's limits: its share of what the run has left
// (see the top of this file), narrowed by del. short names a resource
// that leaves no share at all.
func childShare(e *env, tr *transcript, pl *plan, cur *cursor, pend *pending, del tool.Delegation, n int) (run.Limits, string) {
	l, u := e.run.Limits, cur.inUse(pend.used())
	open := int64(0) // calls of this answer not run yet: each takes one of the run's tool calls
	for _, tc := range tr.openCalls() {
		if it, ok := pl.get(tc.ID); !ok || it.Status == run.PlanPending {
			open++
		}
	}
	d := run.DefaultLimits()
	share := func(limit, used, narrow, def int64) int64 {
		v := def
		if limit > 0 {
			v = (limit - used) / int64(max(n, 1))
		}
		if narrow > 0 && narrow < v {
			v = narrow
		}
		return v
	}
	out := run.Limits{
		MaxSteps:         share(0, 0, del.Limits.MaxSteps, d.MaxSteps),
		MaxTokens:        share(l.MaxTokens, u.Tokens, del.Limits.MaxTokens, d.MaxTokens),
		MaxSpendMicroUSD: share(l.MaxSpendMicroUSD, u.SpendMicroUSD, del.Limits.MaxSpendMicroUSD, d.MaxSpendMicroUSD),
		MaxToolCalls:     share(l.MaxToolCalls, u.ToolCalls+open, del.Limits.MaxToolCalls, d.MaxToolCalls),
		Deadline:         l.Deadline,
	}
	if del.Timeout > 0 {
		if dl := e.opt.Clock().Add(del.Timeout); out.Deadline.IsZero() || dl.Before(out.Deadline) {
			out.Deadline = dl
		}
	}
	switch {
	case out.MaxTokens <= 0:
		return out, "tokens"
	case out.MaxSpendMicroUSD <= 0:
		return out, "spend"
	case out.MaxToolCalls <= 0:
		return out, "tool calls"
	}
	return out, ""
}

// spawn creates op's child run (or finds it: its id is derived from op),
// makes sure an execution drives it, and records it as op's outcome. It is
// safe to repeat at every point: this is also how a pending child start is
// reconciled after a crash.
func spawn(ctx context.Context, e *env, pend *pending, it run.PlanItem, op run.Operation) (Decision, bool, error) {
	var spec childSpec
	if err := json.Unmarshal(op.Args, &spec); err != nil {
		return Decision{}, true, fmt.Errorf("operation %s: the child's definition: %w", op.ID, err)
	}
	if e.opt.Children == nil {
		return Decision{}, true, fmt.Errorf("operation %s starts a child run and this worker cannot start child runs", op.ID)
	}
	child := run.Run{ID: run.ChildRunID(e.run.ID, op.ID), SessionID: spec.Session, Owner: e.run.Owner, Agent: spec.Agent,
		Request: spec.Input, InputPolicy: run.InputQueue, Limits: spec.Limits, TraceParent: e.run.TraceParent,
		Caller: run.Caller{RunID: e.run.ID, PlanItemID: it.ID, OperationID: op.ID, Depth: e.run.Caller.Depth + 1}}
	got, created, err := e.opt.Children.CreateRun(ctx, child)
	if err != nil {
		return Decision{}, true, &RetryableError{Err: fmt.Errorf("start child run %s: %w", child.ID, err)}
	}
	e.opt.Faults.Hit(FaultChildStart)
	if err := e.opt.Children.StartRun(ctx, got.ID); err != nil {
		return Decision{}, true, &RetryableError{Err: fmt.Errorf("start child run %s: %w", got.ID, err)}
	}
	how := "dispatched"
	if !created {
		how = "found"
	}
	pend.event(run.Event{Type: run.EventChildStarted, PlanItemID: it.ID, OperationID: op.ID, Data: mustJSON(map[string]any{
		"child_run_id": got.ID, "agent": spec.Agent, "how": how, "limits": got.Limits})})
	pend.event(run.Event{Type: run.EventOpSucceeded, PlanItemID: it.ID, OperationID: op.ID, Data: jsonObj("external_id", got.ID, "how", how)})
	upd := store.OperationUpdate{ID: op.ID, Status: run.OpSucceeded, ExternalID: got.ID}
	if err := pend.flush(ctx, store.Commit{OperationUpdates: []store.OperationUpdate{upd}}); err != nil {
		return Decision{}, true, err
	}
	return Decision{}, false, nil
}

// respawn reconciles a pending child start: starting it again finds the
// one child, or creates it.
func respawn(ctx context.Context, e *env, pl *plan, pend *pending, op run.Operation) (Decision, bool, error) {
	it, ok := pl.byID(op.PlanItemID)
	if !ok {
		return needsHuman(ctx, pend, it, op, fmt.Sprintf("pending operation %s: its plan item is unknown to this worker", op.ID))
	}
	return spawn(ctx, e, pend, it, op)
}

// awaitChildren answers the answer's sub-agent calls once every child
// has ended (completed, failed, cancelled or needs_human); until then the
// Step ends with a wait, holding nothing.
func awaitChildren(ctx context.Context, e *env, tr *transcript, pl *plan, pend *pending) (Decision, bool, error) {
	var items []run.PlanItem
	seen := map[string]bool{} // each child is answered, and its use added, once
	for _, tc := range tr.openCalls() {
		it, ok := pl.get(tc.ID)
		if _, del := e.tools.delegating(tc.Name); ok && del && it.Status == run.PlanRunning && !seen[it.ID] {
			seen[it.ID] = true
			items = append(items, it)
		}
	}
	if len(items) == 0 {
		return Decision{}, false, nil
	}
	kids := make([]run.Run, len(items))
	var waiting, unstarted []string
	oldest := e.opt.Clock()
	for i, it := range items {
		c, err := e.opt.Store.GetRun(ctx, run.ChildRunID(e.run.ID, opID(it)))
		if err != nil {
			return Decision{}, true, &RetryableError{Err: fmt.Errorf("child of %s: %w", it.ID, err)}
		}
		kids[i] = c
		if !c.Status.Terminal() && c.Status != run.StatusNeedsHuman {
			waiting = append(waiting, c.ID)
			oldest = minTime(oldest, c.CreatedAt)
		}
		if d, ok := e.opt.Children.(deferredStarts); ok && d.StartsDeferred() && c.Status == run.StatusCreated {
			unstarted = append(unstarted, c.ID)
		}
	}
	if len(waiting) > 0 {
		pend.releaseLease()
		if err := pend.flush(ctx, store.Commit{}); err != nil {
			return Decision{}, true, err
		}
		return Decision{Next: NextWait, WaitSeconds: childPoll(e, oldest), Error: "waiting for child runs " + strings.Join(waiting, ", "),
			Children: unstarted}, true, nil
	}
	e.opt.Faults.Hit(FaultParentResume)
	for i, it := range items {
		childEnded(ctx, e, tr, pend, it, kids[i])
	}
	return Decision{}, false, nil
}

// childPoll is how long a parent waits before it looks again: a quarter
// of how long its children have run, from one second up to ChildPoll, so
// a long child costs its parent few Steps and a short one little delay.
func childPoll(e *env, oldest time.Time) int64 {
	w := e.opt.Clock().Sub(oldest) / 4
	w = min(max(w, time.Second), e.opt.ChildPoll)
	return int64(w.Seconds() + 0.999)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// childEnded answers it with its child c's outcome and adds what c used
// to the run's use.
func childEnded(ctx context.Context, e *env, tr *transcript, pend *pending, it run.PlanItem, c run.Run) {
	b := c.Budget
	pend.use(store.Amounts{Tokens: b.TokensUsed, SpendMicroUSD: b.SpendUsedMicroUSD, ToolCalls: b.ToolCallsUsed})
	pend.event(run.Event{Type: run.EventChildEnded, PlanItemID: it.ID, OperationID: opID(it), Data: mustJSON(map[string]any{
		"child_run_id": c.ID, "agent": c.Agent, "status": c.Status, "error": c.Error,
		"tokens_used": b.TokensUsed, "spend_used_micro_usd": b.SpendUsedMicroUSD, "tool_calls_used": b.ToolCallsUsed})})
	res := tool.Result{Data: mustJSON(map[string]any{"child_run_id": c.ID, "agent": c.Agent, "status": c.Status})}
	name := fmt.Sprintf("The sub-agent %s (run %s)", c.Agent, c.ID)
	switch c.Status {
	case run.StatusCompleted:
		res.Content = c.Output + childArtifacts(ctx, e, c.ID)
		pend.event(run.Event{Type: run.EventToolCompleted, PlanItemID: it.ID, Data: jsonObj("tool", it.Tool, "child_run_id", c.ID)})
		finishItem(pend, tr, it, run.PlanCompleted, res, false)
		return
	case run.StatusNeedsHuman:
		res.Content = name + " stopped and needs a person: " + c.Error + " It will not go on by itself; its work is not done."
	case run.StatusCancelled:
		res.Content = name + " was cancelled; its work is not done."
	default:
		res.Content = name + " failed: " + c.Error + " Its work is not done."
	}
	pend.event(run.Event{Type: run.EventToolFailed, PlanItemID: it.ID, Data: jsonObj("tool", it.Tool, "error", res.Content, "dispatched", true)})
	finishItem(pend, tr, it, run.PlanFailed, res, true)
}

// childArtifacts names the artifacts a child left, for its answer; "" when
// none (or none could be listed: the answer stands without them).
func childArtifacts(ctx context.Context, e *env, childID string) string {
	if e.opt.Artifacts == nil {
		return ""
	}
	infos, err := e.opt.Artifacts.List(ctx, childID)
	if err != nil {
		e.log.Warn("child artifacts not listed", "child_run_id", childID, "err", err)
		return ""
	}
	if len(infos) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("\n\nArtifacts of run " + childID + ":")
	for _, in := range infos {
		fmt.Fprintf(&sb, "\n- %s (sha256 %s, %d bytes)", in.Key.Name, in.SHA256, in.Size)
	}
	return sb.String()
}

// parentStopped reports whether this child run's parent was cancelled or
// ended without it: a child never outlives its parent's cancel, even one
// started while the cancel was on its way.
func parentStopped(ctx context.Context, e *env) (bool, error) {
	if e.run.Caller.RunID == "" {
		return false, nil
	}
	sig, err := e.opt.Store.RunSignals(ctx, e.run.Caller.RunID)
	if err != nil {
		return false, &RetryableError{Err: err}
	}
	return sig.CancelRequested || sig.Status == run.StatusCancelled || sig.Status == run.StatusFailed, nil
}
