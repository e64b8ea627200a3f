package api

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// LimitDecisionRequest is the body of POST /v1/runs/{id}/limits: a
// person's answer to a run paused at a limit (its agent's OnLimit policy
// pauses). Raise approves the pending keel.raise_limit approval, whose
// args name the limit and the amount; stop denies it and the run fails.
type LimitDecisionRequest struct {
	// Decision is "raise" or "stop".
	Decision string `json:"decision"`
	// Limit, when set, must be the limit the run paused at (max_steps,
	// max_tool_calls, max_tokens, max_spend): a guard against answering
	// another pause than the one shown.
	Limit  string `json:"limit,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Limit decisions.
const (
	LimitRaise = "raise"
	LimitStop  = "stop"
)

// CodeNotPaused: the run waits on no raise of a limit.
const CodeNotPaused = "not_paused"

// decideLimit serves POST /v1/runs/{id}/limits.
func (s *server) decideLimit(w http.ResponseWriter, r *http.Request, principal string) {
	var req LimitDecisionRequest
	if e := s.decodeBody(w, r, &req, false); e != nil {
		writeError(w, e)
		return
	}
	if e := req.check(); e != nil {
		writeError(w, e)
		return
	}
	rr, ok := s.pathRun(w, r, principal)
	if !ok {
		return
	}
	aps, err := s.store.ListApprovals(r.Context(), rr.ID)
	if err != nil {
		s.fail(w, r, "run", err)
		return
	}
	var a, last run.Approval
	for _, x := range aps {
		if x.Tool == harness.RaiseLimitTool && x.Status == run.ApprovalPending {
			a = x
		}
		if last.ID == "" || !x.CreatedAt.Before(last.CreatedAt) {
			last = x
		}
	}
	if a.ID == "" {
		s.limitDecidedAlready(w, r, rr, last, req)
		return
	}
	var args harness.RaiseArgs
	if err := json.Unmarshal(a.Args, &args); err == nil && req.Limit != "" && req.Limit != args.Limit {
		writeError(w, &Error{Status: http.StatusConflict, Code: CodeInvalidField, Field: "limit",
			Message: fmt.Sprintf("the run paused at %s, not %s", args.Limit, req.Limit)})
		return
	}
	decided, err := s.store.DecideApproval(r.Context(), store.Decision{RunID: rr.ID, ApprovalID: a.ID,
		Approve: req.Decision == LimitRaise, ArgsHash: a.ArgsHash, DecidedBy: principal, Reason: req.Reason})
	if err != nil {
		s.fail(w, r, "approval", err)
		return
	}
	if err := s.resumer.Resume(r.Context(), decided); err != nil {
		s.resumeFailed(w, r, decided, err)
		return
	}
	writeJSON(w, http.StatusOK, approvalView(decided))
}

// limitDecidedAlready answers a limit decision on a run that waits on no
// pending raise. When the run's last approval is a raise decided as the
// request asks (a retry: the process that recorded it may have died
// before it woke the run, or the answer was lost), the wait is woken
// again and the decision returned: a retry finishes the job. Otherwise
// 409.
func (s *server) limitDecidedAlready(w http.ResponseWriter, r *http.Request, rr run.Run, last run.Approval, req LimitDecisionRequest) {
	if rr.Status.Terminal() || last.Tool != harness.RaiseLimitTool || last.Status == run.ApprovalPending {
		writeError(w, conflict(CodeNotPaused, fmt.Sprintf("run %s is %s and waits on no raise of a limit", rr.ID, rr.Status)))
		return
	}
	want := run.ApprovalDenied
	if req.Decision == LimitRaise {
		want = run.ApprovalApproved
	}
	if last.Status != want {
		msg := fmt.Sprintf("the raise the run waits on is already %s", last.Status)
		if last.DecidedBy != "" {
			msg += " by " + last.DecidedBy
		}
		writeError(w, conflict(CodeApprovalNotPending, msg))
		return
	}
	if err := s.resumer.Resume(r.Context(), last); err != nil {
		s.resumeFailed(w, r, last, err)
		return
	}
	writeJSON(w, http.StatusOK, approvalView(last))
}

func (req LimitDecisionRequest) check() *Error {
	switch req.Decision {
	case LimitRaise, LimitStop:
	case "":
		return badField(CodeMissingField, "decision", `decision is required: "raise" or "stop"`)
	default:
		return badField(CodeInvalidField, "decision", fmt.Sprintf(`decision must be "raise" or "stop", not %q`, req.Decision))
	}
	switch req.Limit {
	case "", "max_steps", "max_tool_calls", "max_tokens", "max_spend":
	default:
		return badField(CodeInvalidField, "limit", fmt.Sprintf("limit must be max_steps, max_tool_calls, max_tokens or max_spend, not %q", req.Limit))
	}
	if len(req.Reason) > maxReason {
		return badField(CodeInvalidField, "reason", fmt.Sprintf("reason exceeds %d bytes", maxReason))
	}
	return nil
}
