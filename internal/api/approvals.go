package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// maxReason bounds the reason given with a decision.
const maxReason = 4 << 10

// listApprovals serves GET /v1/runs/{id}/approvals.
func (s *server) listApprovals(w http.ResponseWriter, r *http.Request, principal string) {
	rr, ok := s.pathRun(w, r, principal)
	if !ok {
		return
	}
	as, err := s.store.ListApprovals(r.Context(), rr.ID)
	if err != nil {
		s.fail(w, r, "run", err)
		return
	}
	out := ApprovalList{Approvals: make([]Approval, 0, len(as))}
	for _, a := range as {
		out.Approvals = append(out.Approvals, approvalView(a))
	}
	writeJSON(w, http.StatusOK, out)
}

// getApproval serves GET /v1/runs/{id}/approvals/{approval_id}.
func (s *server) getApproval(w http.ResponseWriter, r *http.Request, principal string) {
	rr, ok := s.pathRun(w, r, principal)
	if !ok {
		return
	}
	a, err := s.approval(r, rr.ID)
	if err != nil {
		s.fail(w, r, "approval", err)
		return
	}
	writeJSON(w, http.StatusOK, approvalView(a))
}

func (s *server) approval(r *http.Request, runID string) (run.Approval, error) {
	id := r.PathValue("approval_id")
	if !validID(id) {
		return run.Approval{}, notFound("approval")
	}
	return s.store.GetApproval(r.Context(), runID, id)
}

// decide serves POST /v1/runs/{id}/approvals/{approval_id}: a person's
// decision on the exact action, then the run's wait is woken.
func (s *server) decide(w http.ResponseWriter, r *http.Request, principal string) {
	var req DecisionRequest
	if e := s.decodeBody(w, r, &req, false); e != nil {
		writeError(w, e)
		return
	}
	switch req.Decision {
	case DecisionApprove, DecisionDeny:
	case "":
		writeError(w, badField(CodeMissingField, "decision", `decision is required: "approve" or "deny"`))
		return
	default:
		writeError(w, badField(CodeInvalidField, "decision", fmt.Sprintf(`decision must be "approve" or "deny", not %q`, req.Decision)))
		return
	}
	if req.ArgsHash == "" {
		writeError(w, badField(CodeMissingField, "args_hash", "args_hash is required: the hash of the action you were shown"))
		return
	}
	if len(req.ArgsHash) > maxIDLen {
		writeError(w, badField(CodeInvalidField, "args_hash", "args_hash is too long"))
		return
	}
	if len(req.Reason) > maxReason {
		writeError(w, badField(CodeInvalidField, "reason", fmt.Sprintf("reason exceeds %d bytes", maxReason)))
		return
	}
	ctx := r.Context()
	rr, ok := s.pathRun(w, r, principal)
	if !ok {
		return
	}
	a, err := s.approval(r, rr.ID)
	if err != nil {
		s.fail(w, r, "approval", err)
		return
	}
	if a.Status != run.ApprovalPending {
		s.decidedAlready(w, r, a, req)
		return
	}
	if rr.Status.Terminal() {
		writeError(w, conflict(CodeRunFinished, fmt.Sprintf("the run is %s; its approvals can no longer be decided", rr.Status)))
		return
	}
	decided, err := s.store.DecideApproval(ctx, store.Decision{
		RunID: rr.ID, ApprovalID: a.ID, Approve: req.Decision == DecisionApprove,
		ArgsHash: req.ArgsHash, DecidedBy: principal, Reason: req.Reason,
	})
	if errors.Is(err, store.ErrConflict) {
		// Decided or cancelled between our read and the write.
		if cur, gerr := s.store.GetApproval(ctx, rr.ID, a.ID); gerr == nil && cur.Status != run.ApprovalPending {
			s.decidedAlready(w, r, cur, req)
			return
		}
	}
	if err != nil {
		s.fail(w, r, "approval", err)
		return
	}
	if err := s.resumer.Resume(ctx, decided); err != nil {
		s.resumeFailed(w, r, decided, err)
		return
	}
	writeJSON(w, http.StatusOK, approvalView(decided))
}

// decidedAlready answers a decision on an approval that is not pending with
// 409. When the request repeats the recorded decision, the wait is woken
// again (Resume is idempotent): that is how a client heals after a 503
// resume_failed.
func (s *server) decidedAlready(w http.ResponseWriter, r *http.Request, a run.Approval, req DecisionRequest) {
	same := a.ArgsHash == req.ArgsHash &&
		((a.Status == run.ApprovalApproved && req.Decision == DecisionApprove) ||
			(a.Status == run.ApprovalDenied && req.Decision == DecisionDeny))
	if same {
		if err := s.resumer.Resume(r.Context(), a); err != nil {
			s.resumeFailed(w, r, a, err)
			return
		}
	}
	msg := fmt.Sprintf("approval %s is already %s", a.ID, a.Status)
	if a.DecidedBy != "" {
		msg += " by " + a.DecidedBy
	}
	writeError(w, conflict(CodeApprovalNotPending, msg))
}

func (s *server) resumeFailed(w http.ResponseWriter, r *http.Request, a run.Approval, err error) {
	if clientGone(r.Context(), err) {
		w.WriteHeader(499)
		return
	}
	s.log.ErrorContext(r.Context(), "resume after decision", "run_id", a.RunID, "approval_id", a.ID, "err", err)
	writeError(w, &Error{Status: http.StatusServiceUnavailable, Code: CodeResumeFailed,
		Message: fmt.Sprintf("approval %s is %s, but the run could not be woken; repeat the same request to retry", a.ID, a.Status)})
}
