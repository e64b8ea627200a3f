package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// cancelRequest is the body of POST /v1/runs/{id}/cancel: empty, or {}.
type cancelRequest struct{}

// cancel serves POST /v1/runs/{id}/cancel: sets the cancel flag (the
// harness stops at its next check; an effect in flight is not undone),
// withdraws pending approvals and wakes their waits.
func (s *server) cancel(w http.ResponseWriter, r *http.Request, principal string) {
	var req cancelRequest
	if e := s.decodeBody(w, r, &req, true); e != nil {
		writeError(w, e)
		return
	}
	ctx := r.Context()
	rr, ok := s.liveRun(w, r, principal, "the run is already %s")
	if !ok {
		return
	}
	repeat := rr.CancelRequested
	after, cancelled, err := s.store.RequestCancel(ctx, rr.ID, principal)
	if err != nil {
		s.fail(w, r, "run", err)
		return
	}
	wake := cancelled
	if repeat {
		// A repeated cancel also wakes the waits an earlier cancel withdrew,
		// in case waking them failed then (Resume is idempotent).
		all, err := s.store.ListApprovals(ctx, rr.ID)
		if err != nil {
			s.fail(w, r, "run", err)
			return
		}
		seen := map[string]bool{}
		for _, a := range cancelled {
			seen[a.ID] = true
		}
		for _, a := range all {
			if a.Status == run.ApprovalCancelled && !seen[a.ID] {
				wake = append(wake, a)
			}
		}
	}
	for _, a := range wake {
		if err := s.resumer.Resume(ctx, a); err != nil {
			if clientGone(ctx, err) {
				w.WriteHeader(499)
				return
			}
			s.log.ErrorContext(ctx, "resume after cancel", "run_id", a.RunID, "approval_id", a.ID, "err", err)
			writeError(w, &Error{Status: http.StatusServiceUnavailable, Code: CodeResumeFailed,
				Message: "the cancellation is recorded, but a waiting approval could not be woken; repeat the request to retry"})
			return
		}
	}
	if after.Status == run.StatusCreated {
		// Never started (its creator's start was lost): only an execution
		// can finish it, so start it — by name, idempotent — and its first
		// Step sees the flag and ends the run cancelled. Should this fail,
		// the sweeper starts it.
		if err := s.starter.StartRun(ctx, rr.ID); err != nil {
			s.log.WarnContext(ctx, "start after cancel of a never-started run", "run_id", rr.ID, "err", err)
		}
	}
	out := CancelResponse{Run: runView(after), CancelledApprovals: make([]Approval, 0, len(cancelled))}
	for _, a := range cancelled {
		out.CancelledApprovals = append(out.CancelledApprovals, approvalView(a))
	}
	writeJSON(w, http.StatusAccepted, out)
}

// input serves POST /v1/runs/{id}/input, following the run's input policy:
// queue and interrupt store the input (the harness picks it up at the next
// turn, or after the current tool; under interrupt a pending tool approval
// is withdrawn, a pause at a limit is not: withdrawPending); reject refuses
// it; rollback refuses it and points at fork, since a rollback is a new
// run from a checkpoint the caller chooses.
func (s *server) input(w http.ResponseWriter, r *http.Request, principal string) {
	var req InputRequest
	if e := s.decodeBody(w, r, &req, false); e != nil {
		writeError(w, e)
		return
	}
	if e := checkText("text", req.Text); e != nil {
		writeError(w, e)
		return
	}
	ctx := r.Context()
	rr, ok := s.liveRun(w, r, principal, "the run is %s; start a new run or fork this one")
	if !ok {
		return
	}
	switch rr.InputPolicy {
	case run.InputReject:
		writeError(w, conflict(CodeInputRejected, "this run's input policy is reject: it takes no input while active"))
		return
	case run.InputRollback:
		writeError(w, conflict(CodeInputPolicyRollback, fmt.Sprintf(
			"this run's input policy is rollback: choose a checkpoint (GET %s) and POST %s {\"checkpoint_id\"}, then send the input to the new run",
			runView(rr).Links.Checkpoints, runView(rr).Links.Fork)))
		return
	}
	in, err := s.store.EnqueueInput(ctx, rr.ID, req.Text)
	if err != nil {
		s.fail(w, r, "run", err)
		return
	}
	if rr.InputPolicy == run.InputInterrupt && rr.Status == run.StatusAwaitingApproval {
		if err := s.withdrawPending(ctx, rr.ID, principal); err != nil {
			s.fail(w, r, "run", err)
			return
		}
	}
	writeJSON(w, http.StatusAccepted, InputResponse{InputID: in.ID, RunID: rr.ID, Policy: rr.InputPolicy, ReceivedAt: in.ReceivedAt})
}

// withdrawnByInput is the reason of an approval denied by input under the
// interrupt policy.
const withdrawnByInput = "withdrawn: new input arrived under the interrupt policy"

// withdrawPending denies the run's pending tool approvals and wakes its
// wait: under the interrupt policy new input stops the turn after the
// current tool, and a call waiting for approval has not started, so
// nothing of it has happened and it is stopped too. The model is told the
// call was denied and gets the input; it may propose the action again,
// which then needs a new approval. An approval decided meanwhile stands.
//
// A run paused at a limit (a pending harness.RaiseLimitTool approval) is
// left waiting: the pause is a person's decision about the run's budget,
// not a tool call the input could interrupt, and denying it would fail
// the run as stopped by a person. The input stays queued and the run
// reads it once a raise lets it go on.
func (s *server) withdrawPending(ctx context.Context, runID, by string) error {
	aps, err := s.store.ListApprovals(ctx, runID)
	if err != nil {
		return err
	}
	for _, a := range aps {
		if a.Status != run.ApprovalPending || a.Tool == harness.RaiseLimitTool {
			continue
		}
		d, err := s.store.DecideApproval(ctx, store.Decision{RunID: runID, ApprovalID: a.ID, Approve: false,
			ArgsHash: a.ArgsHash, DecidedBy: by, Reason: withdrawnByInput})
		if errors.Is(err, store.ErrConflict) {
			continue // decided between the read and the write
		}
		if err != nil {
			return err
		}
		if err := s.resumer.Resume(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// fork serves POST /v1/runs/{id}/fork: a new run of the same session, agent,
// request, policy and limits that resumes from one of this run's
// checkpoints (ParentRunID, ForkCheckpointID), started at once. Recorded
// tool results are reused by the harness, so no effect repeats. It honours
// Idempotency-Key like POST /v1/runs.
func (s *server) fork(w http.ResponseWriter, r *http.Request, principal string) {
	var req ForkRequest
	if e := s.decodeBody(w, r, &req, false); e != nil {
		writeError(w, e)
		return
	}
	if e := checkID("checkpoint_id", req.CheckpointID); e != nil {
		writeError(w, e)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if key != "" && !validID(key) {
		writeError(w, badField(CodeInvalidField, "Idempotency-Key", "the Idempotency-Key header is not a valid key"))
		return
	}
	ctx := r.Context()
	parent, ok := s.pathRun(w, r, principal)
	if !ok {
		return
	}
	cp, err := s.store.GetCheckpoint(ctx, parent.ID, req.CheckpointID)
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Field: "checkpoint_id",
			Message: "checkpoint " + req.CheckpointID + " not found in run " + parent.ID})
		return
	}
	if err != nil {
		s.fail(w, r, "checkpoint", err)
		return
	}
	now := s.now().UTC()
	child, created, err := s.store.CreateRun(ctx, run.Run{
		ID: run.NewID("run"), SessionID: parent.SessionID, Owner: principal, Agent: parent.Agent,
		ClientKey: key, Request: parent.Request, Command: parent.Command, Status: run.StatusCreated,
		InputPolicy: parent.InputPolicy, Limits: parent.Limits,
		ParentRunID: parent.ID, ForkCheckpointID: cp.ID, TraceParent: run.NewTraceParent(), CreatedAt: now, UpdatedAt: now,
		// The fork's records are the parent's up to cp: the first Step
		// checks them from the parent's version, as it would the parent.
		AgentVersion: parent.AgentVersion,
	})
	if err != nil {
		s.fail(w, r, "run", err)
		return
	}
	if !created && (child.ParentRunID != parent.ID || child.ForkCheckpointID != cp.ID) {
		writeError(w, &Error{Status: http.StatusConflict, Code: CodeIdempotencyKeyReused, Field: "Idempotency-Key",
			Message: "this Idempotency-Key was used for run " + child.ID + ", which is not this fork"})
		return
	}
	if created {
		// The parent's log tells where its forks went. It is a second write;
		// if it fails the fork stands and the child still names its parent.
		data, _ := json.Marshal(map[string]string{"child_run_id": child.ID, "checkpoint_id": cp.ID})
		if _, err := s.store.AppendEvents(ctx, parent.ID, []run.Event{{Type: run.EventRunForked, Time: now, Data: data}}); err != nil {
			s.log.WarnContext(ctx, "fork: recording run_forked on the parent", "run_id", parent.ID, "child_run_id", child.ID, "err", err)
		}
	}
	s.start(w, r, child, created)
}
