package harness

// A run at one of its limits: failed, or paused for a person to raise the
// limit or stop the run, as the agent's LimitPolicy says.

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// LimitPolicy is what a run does when it would pass one of its limits
// (steps, tool calls, tokens, spend). The deadline is not one of them: a
// run past its deadline always fails.
type LimitPolicy struct {
	// Pause: instead of failing, the run asks a person. It commits an
	// approval of the tool RaiseLimitTool whose args name the limit and
	// the raise asked for (a notification in the same commit, like every
	// approval), and waits holding no process. Approved, the limit is
	// raised by that amount (a budget_raised event) and the run goes on;
	// denied or cancelled, the run fails as it would have.
	Pause bool
	// RaiseBy is the raise a pause asks for, per limit; a zero field asks
	// for the limit's current size again. Its Deadline is ignored.
	RaiseBy run.Limits
}

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
func (s *step) atLimit(ctx context.Context, limit string, value any) (Decision, error) {
	lims := s.run.Limits
	cur := limitField(&lims, limit)
	if !s.agent.OnLimit.Pause || cur == nil || *cur <= 0 {
		return s.exceeded(ctx, limit, value, "")
	}
	if why, err := shareOfParent(ctx, s.opt.Store, s.run, limit); err != nil || why != "" {
		if err != nil {
			return Decision{}, err
		}
		return s.exceeded(ctx, limit, value, why)
	}
	pol := s.agent.OnLimit.RaiseBy
	by := *limitField(&pol, limit)
	if by <= 0 {
		by = *cur
	}
	args := RaiseArgs{Limit: limit, Now: *cur, RaiseBy: by, After: *cur + by}
	apID := fmt.Sprintf("apr_limit_%s_%d", limit, *cur) // one request per limit and size
	ap, err := s.opt.Store.GetApproval(ctx, s.run.ID, apID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if d, stop, err := s.cancelBeforeAsking(ctx); stop || err != nil {
			return d, err
		}
		return s.askRaise(ctx, apID, args)
	case err != nil:
		return Decision{}, &RetryableError{Err: err}
	}
	switch ap.Status {
	case run.ApprovalPending:
		s.pend.setStatus(run.StatusAwaitingApproval)
		s.pend.releaseLease()
		if err := s.pend.flush(ctx, store.Commit{}); err != nil {
			return Decision{}, err
		}
		return s.approvalDecision(apID), nil
	case run.ApprovalApproved:
		return s.raise(ctx, ap, args)
	default: // denied or cancelled: a person stopped the run
		s.tel.approvalDecided(ctx, ap)
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
		return s.exceeded(ctx, limit, value, why)
	}
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
// parentReader reads a child run's parent.
type parentReader interface {
	GetRun(ctx context.Context, id string) (run.Run, error)
}

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

// askRaise commits the request for a raise: the approval (and so its
// notification), a budget_paused event, the run awaiting approval.
func (s *step) askRaise(ctx context.Context, apID string, args RaiseArgs) (Decision, error) {
	raw := mustJSON(args)
	hash, err := run.ArgsHash(raw)
	if err != nil {
		return Decision{}, fmt.Errorf("raise request args: %w", err)
	}
	ap := run.Approval{ID: apID, RunID: s.run.ID, SessionID: s.run.SessionID, Tool: RaiseLimitTool, Mode: run.ModeMutating,
		Args: raw, ArgsHash: hash, Status: run.ApprovalPending, CreatedAt: s.opt.Clock()}
	s.pend.setStatus(run.StatusAwaitingApproval)
	s.pend.event(run.Event{Type: run.EventBudgetPaused, Data: mustJSON(map[string]any{
		"limit": args.Limit, "limit_now": args.Now, "raise_by": args.RaiseBy, "approval_id": apID, "budget": s.cur.budget})})
	s.pend.event(run.Event{Type: run.EventApprovalRequested, Data: mustJSON(map[string]any{
		"approval_id": apID, "tool": RaiseLimitTool, "mode": ap.Mode, "args_hash": hash, "args": raw})})
	s.pend.releaseLease()
	if err := s.pend.flush(ctx, store.Commit{NewApprovals: []run.Approval{ap}}); err != nil {
		return Decision{}, err
	}
	s.tel.approvalRequested(ctx, ap)
	s.opt.Faults.Hit(FaultAwaitApproval)
	return s.approvalDecision(apID), nil
}

// raise applies an approved raise in one commit with its budget_raised
// event, then ends the Step: the next one runs under the new limit.
func (s *step) raise(ctx context.Context, ap run.Approval, args RaiseArgs) (Decision, error) {
	s.tel.approvalDecided(ctx, ap)
	var delta run.Limits
	*limitField(&delta, args.Limit) = args.RaiseBy
	s.pend.raiseLimits(delta)
	s.pend.setStatus(run.StatusRunning)
	s.pend.event(run.Event{Type: run.EventBudgetRaised, Data: mustJSON(map[string]any{
		"limit": args.Limit, "by": args.RaiseBy, "from": args.Now, "to": args.After,
		"approval_id": ap.ID, "approved_by": ap.DecidedBy, "reason": ap.Reason})})
	s.pend.releaseLease()
	if err := s.pend.flush(ctx, store.Commit{}); err != nil {
		return Decision{}, err
	}
	*limitField(&s.run.Limits, args.Limit) += args.RaiseBy
	return Decision{Next: NextContinue}, nil
}

// callOver names the limit one more call of t would pass (tool calls, or
// spend when the tool has a price), with the limit's value; "" when none.
func (s *step) callOver(t tool.Tool) (string, int64) {
	lim, u := s.run.Limits, s.cur.inUse(s.pend.used())
	if lim.MaxToolCalls > 0 && u.ToolCalls+1 > lim.MaxToolCalls {
		return "max_tool_calls", lim.MaxToolCalls
	}
	if p := price(t); p > 0 && lim.MaxSpendMicroUSD > 0 &&
		u.SpendMicroUSD+p > lim.MaxSpendMicroUSD {
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
