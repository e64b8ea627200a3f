package harness

// A run at one of its limits: failed, or paused for a person to raise the
// limit or stop the run, as the agent's LimitPolicy says; and the checks
// that find a call would pass one.

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// RaiseLimitTool is the tool name of the approvals a paused run asks:
// approving one raises the limit its args name by their raise_by.
const RaiseLimitTool = "keel.raise_limit"

// RaiseArgs are the args of a RaiseLimitTool approval: the approval (and
// its link) is bound to exactly this raise.
type RaiseArgs struct {
	Limit string `json:"limit"`
	// Now is the limit when the run paused; RaiseBy is added to it.
	Now     int64 `json:"limit_now"`
	RaiseBy int64 `json:"raise_by"`
	After   int64 `json:"limit_after"`
}

// limitField points at the field of l that limit names; nil for the
// deadline or an unknown name.
func limitField(l *run.Limits, limit string) *int64 {
	switch limit {
	case "max_steps":
		return &l.MaxSteps
	case "max_tool_calls":
		return &l.MaxToolCalls
	case "max_tokens":
		return &l.MaxTokens
	case "max_spend":
		return &l.MaxSpendMicroUSD
	}
	return nil
}

// atLimit is where every limit check lands: the run fails (exceeded), or,
// under a pausing policy, asks a person for a raise; an answered request
// raises the limit (the Step ends with continue, and the next Step works
// under the new limit) or fails the run.
func atLimit(ctx context.Context, e *env, tr *transcript, pl *plan, cur *cursor, pend *pending, limit string, value any) (Decision, error) {
	lims := e.run.Limits
	now := limitField(&lims, limit)
	if !e.agent.OnLimit.Pause || now == nil || *now <= 0 {
		return exceeded(ctx, e, tr, pl, pend, limit, value, "")
	}
	if why, err := shareOfParent(ctx, e.opt.Store, e.run, limit); err != nil || why != "" {
		if err != nil {
			return Decision{}, err
		}
		return exceeded(ctx, e, tr, pl, pend, limit, value, why)
	}
	pol := e.agent.OnLimit.RaiseBy
	by := *limitField(&pol, limit)
	if by <= 0 {
		by = *now
	}
	args := RaiseArgs{Limit: limit, Now: *now, RaiseBy: by, After: *now + by}
	apID := fmt.Sprintf("apr_limit_%s_%d", limit, *now) // one request per limit and size
	ap, err := e.opt.Store.GetApproval(ctx, e.run.ID, apID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if d, stop, err := cancelBeforeAsking(ctx, e, tr, pl, pend); stop || err != nil {
			return d, err
		}
		return askRaise(ctx, e, cur, pend, apID, args)
	case err != nil:
		return Decision{}, &RetryableError{Err: err}
	}
	switch ap.Status {
	case run.ApprovalPending:
		pend.setStatus(run.StatusAwaitingApproval)
		pend.releaseLease()
		if err := pend.flush(ctx, store.Commit{}); err != nil {
			return Decision{}, err
		}
		return approvalDecision(e, apID), nil
	case run.ApprovalApproved:
		return raise(ctx, e, pend, ap, args)
	default: // denied or cancelled: a person stopped the run
		e.tel.approvalDecided(ctx, ap)
		by := ap.DecidedBy
		if by == "" {
			by = "a person"
		}
		why := fmt.Sprintf("; %s stopped the run instead of raising it", by)
		if ap.Reason != "" {
			// The person's words go with the decision into run_failed and
			// the run's error, so events and explain tell why.
			why += ": " + ap.Reason
		}
		return exceeded(ctx, e, tr, pl, pend, limit, value, why)
	}
}

// askRaise commits the request for a raise: the approval (and so its
// notification), a budget_paused event, the run awaiting approval.
func askRaise(ctx context.Context, e *env, cur *cursor, pend *pending, apID string, args RaiseArgs) (Decision, error) {
	raw := mustJSON(args)
	hash, err := run.ArgsHash(raw)
	if err != nil {
		return Decision{}, fmt.Errorf("raise request args: %w", err)
	}
	ap := run.Approval{ID: apID, RunID: e.run.ID, SessionID: e.run.SessionID, Tool: RaiseLimitTool, Mode: run.ModeMutating,
		Args: raw, ArgsHash: hash, Status: run.ApprovalPending, CreatedAt: e.opt.Clock()}
	pend.setStatus(run.StatusAwaitingApproval)
	pend.event(run.Event{Type: run.EventBudgetPaused, Data: mustJSON(map[string]any{
		"limit": args.Limit, "limit_now": args.Now, "raise_by": args.RaiseBy, "approval_id": apID, "budget": cur.budget})})
	pend.event(run.Event{Type: run.EventApprovalRequested, Data: mustJSON(map[string]any{
		"approval_id": apID, "tool": RaiseLimitTool, "mode": ap.Mode, "args_hash": hash, "args": raw})})
	pend.releaseLease()
	if err := pend.flush(ctx, store.Commit{NewApprovals: []run.Approval{ap}}); err != nil {
		return Decision{}, err
	}
	e.tel.approvalRequested(ctx, ap)
	e.opt.Faults.Hit(FaultAwaitApproval)
	return approvalDecision(e, apID), nil
}

// raise applies an approved raise in one commit with its budget_raised
// event, then ends the Step: the next one runs under the new limit.
func raise(ctx context.Context, e *env, pend *pending, ap run.Approval, args RaiseArgs) (Decision, error) {
	e.tel.approvalDecided(ctx, ap)
	var delta run.Limits
	*limitField(&delta, args.Limit) = args.RaiseBy
	pend.raiseLimits(delta)
	pend.setStatus(run.StatusRunning)
	pend.event(run.Event{Type: run.EventBudgetRaised, Data: mustJSON(map[string]any{
		"limit": args.Limit, "by": args.RaiseBy, "from": args.Now, "to": args.After,
		"approval_id": ap.ID, "approved_by": ap.DecidedBy, "reason": ap.Reason})})
	pend.releaseLease()
	if err := pend.flush(ctx, store.Commit{}); err != nil {
		return Decision{}, err
	}
	return Decision{Next: NextContinue}, nil
}

// parentReader reads a child run's parent.
type parentReader interface {
	GetRun(ctx context.Context, id string) (run.Run, error)
}

// shareOfParent says why a child run may not ask for a raise of limit:
// its tokens, spend and tool calls are its share of what its parent had
// left when it started (childShare), and its parent has reserved no more
// for it. A raise a person approved on the child would be spent past the
// parent's own limit, unseen until the parent adds the child's use. So
// the child fails at its share instead, and its parent's model is told;
// a person raises the parent's limit if more is wanted. "" when the run
// is not a child, or its parent does not bound this limit (the share was
// then only a default, and a raise takes nothing from the parent).
func shareOfParent(ctx context.Context, runs parentReader, r run.Run, limit string) (string, error) {
	if r.Caller.RunID == "" || limit == "max_steps" {
		return "", nil
	}
	p, err := runs.GetRun(ctx, r.Caller.RunID)
	if err != nil {
		return "", &RetryableError{Err: fmt.Errorf("parent run %s: %w", r.Caller.RunID, err)}
	}
	pl := p.Limits
	if f := limitField(&pl, limit); f == nil || *f <= 0 {
		return "", nil
	}
	return fmt.Sprintf("; run %s is a sub-agent of run %s and its %s is its share of that run's budget: "+
		"a raise would pass the parent's limit, so none is asked (raise run %s's limit instead)", r.ID, p.ID, limit, p.ID), nil
}

// callOver names the limit one more call of t would pass (tool calls, or
// spend when the tool has a price), with the limit's value; "" when none.
func callOver(e *env, cur *cursor, pend *pending, t tool.Tool) (string, int64) {
	lim, u := e.run.Limits, cur.inUse(pend.used())
	if lim.MaxToolCalls > 0 && u.ToolCalls+1 > lim.MaxToolCalls {
		return "max_tool_calls", lim.MaxToolCalls
	}
	if p := price(t); p > 0 && lim.MaxSpendMicroUSD > 0 && u.SpendMicroUSD+p > lim.MaxSpendMicroUSD {
		return "max_spend", lim.MaxSpendMicroUSD
	}
	return "", 0
}

// price is what one call of t costs against the spend limit.
func price(t tool.Tool) int64 {
	if t == nil {
		return 0
	}
	return t.Info().CostMicroUSD
}
