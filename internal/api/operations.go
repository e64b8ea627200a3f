package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// Operation is one external effect of a run, as the operation protocol
// recorded it.
type Operation struct {
	OperationID    string       `json:"operation_id"`
	RunID          string       `json:"run_id"`
	PlanItemID     string       `json:"plan_item_id,omitempty"`
	Tool           string       `json:"tool"`
	Destination    string       `json:"destination"`
	ArgsHash       string       `json:"args_hash"`
	IdempotencyKey string       `json:"idempotency_key"`
	Status         run.OpStatus `json:"status"`
	ExternalID     string       `json:"external_id,omitempty"`
	Error          string       `json:"error,omitempty"`
	Attempts       int64        `json:"attempts"`
	CreatedAt      time.Time    `json:"created_at"`
	UpdatedAt      time.Time    `json:"updated_at"`
}

// OperationList is the body of GET /v1/runs/{id}/operations.
type OperationList struct {
	Operations []Operation `json:"operations"`
}

// SettleRequest is the body of POST /v1/runs/{id}/operations/{op}/settle:
// what a person established about an operation only they can settle.
type SettleRequest struct {
	// Outcome is happened, not_happened or give_up.
	Outcome string `json:"outcome"`
	// ExternalID and Result are the destination's, when it happened.
	ExternalID string          `json:"external_id,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	// Reason is what was established (or why nobody can): required.
	Reason string `json:"reason"`
}

// CodeNotSettleable: 409, the operation or its run is not needs_human.
const CodeNotSettleable = "not_settleable"

// Continuer starts the next execution of a run that a person's decision
// moved on (a settle), when the Starter can: the run's earlier executions
// have ended. Without it the sweeper resumes the run.
type Continuer interface {
	ContinueRun(ctx context.Context, runID string) error
}

func operationView(op run.Operation) Operation {
	return Operation{OperationID: op.ID, RunID: op.RunID, PlanItemID: op.PlanItemID, Tool: op.Tool, Destination: op.Destination,
		ArgsHash: op.ArgsHash, IdempotencyKey: op.IdempotencyKey, Status: op.Status, ExternalID: op.ExternalID,
		Error: op.Error, Attempts: op.Attempts, CreatedAt: op.CreatedAt, UpdatedAt: op.UpdatedAt}
}

// listOperations serves GET /v1/runs/{id}/operations, oldest first.
func (s *server) listOperations(w http.ResponseWriter, r *http.Request, principal string) {
	rr, ok := s.pathRun(w, r, principal)
	if !ok {
		return
	}
	ops, err := s.store.ListOperations(r.Context(), rr.ID, false)
	if err != nil {
		s.fail(w, r, "run", err)
		return
	}
	out := OperationList{Operations: make([]Operation, 0, len(ops))}
	for _, op := range ops {
		out.Operations = append(out.Operations, operationView(op))
	}
	writeJSON(w, http.StatusOK, out)
}

// settle serves POST /v1/runs/{id}/operations/{op}/settle: records who
// settled the operation and what they found (in the run's log and its
// hash chain), then continues the run when nothing else waits on a person.
func (s *server) settle(w http.ResponseWriter, r *http.Request, principal string) {
	var req SettleRequest
	if e := s.decodeBody(w, r, &req, false); e != nil {
		writeError(w, e)
		return
	}
	if e := validSettle(req); e != nil {
		writeError(w, e)
		return
	}
	rr, ok := s.pathRun(w, r, principal)
	if !ok {
		return
	}
	opID := r.PathValue("op")
	if !validID(opID) {
		writeError(w, notFound("operation"))
		return
	}
	if rr.Status != run.StatusNeedsHuman {
		writeError(w, conflict(CodeNotSettleable, fmt.Sprintf("the run is %s: only the operations of a needs_human run are settled", rr.Status)))
		return
	}
	ctx := r.Context()
	after, err := s.store.SettleOperation(ctx, store.Settlement{RunID: rr.ID, OperationID: opID,
		Outcome: store.SettleOutcome(req.Outcome), ExternalID: req.ExternalID, Result: req.Result, By: principal, Reason: req.Reason})
	switch {
	case errors.Is(err, store.ErrConflict):
		writeError(w, conflict(CodeNotSettleable, "the operation is not needs_human (settled already, or never uncertain), or the run moved on; read it again"))
		return
	case err != nil:
		s.fail(w, r, "operation", err)
		return
	}
	if after.Status == run.StatusRunning {
		if err := s.continueRun(ctx, rr.ID); err != nil {
			// The settle is recorded; the sweeper resumes the run.
			s.log.WarnContext(ctx, "continue after settle", "run_id", rr.ID, "err", err)
		}
	}
	writeJSON(w, http.StatusOK, runView(after))
}

func (s *server) continueRun(ctx context.Context, runID string) error {
	if c, ok := s.starter.(Continuer); ok {
		return c.ContinueRun(ctx, runID)
	}
	return s.starter.StartRun(ctx, runID)
}

func validSettle(req SettleRequest) *Error {
	switch store.SettleOutcome(req.Outcome) {
	case store.SettleHappened, store.SettleNotHappened, store.SettleGiveUp:
	case "":
		return badField(CodeMissingField, "outcome", `outcome is required: "happened", "not_happened" or "give_up"`)
	default:
		return badField(CodeInvalidField, "outcome", fmt.Sprintf(`outcome must be "happened", "not_happened" or "give_up", not %q`, req.Outcome))
	}
	if req.Reason == "" {
		return badField(CodeMissingField, "reason", "reason is required: what you established at the destination, or why nobody can")
	}
	if len(req.Reason) > maxReason {
		return badField(CodeInvalidField, "reason", fmt.Sprintf("reason exceeds %d bytes", maxReason))
	}
	if req.Outcome != string(store.SettleHappened) && (req.ExternalID != "" || len(req.Result) > 0) {
		return badField(CodeInvalidField, "external_id", "external_id and result are only for an operation that happened")
	}
	if len(req.ExternalID) > maxIDLen {
		return badField(CodeInvalidField, "external_id", "external_id is too long")
	}
	if len(req.Result) > 0 && !json.Valid(req.Result) {
		return badField(CodeInvalidField, "result", "result must be JSON")
	}
	if len(req.Result) > store.MaxArgs {
		return badField(CodeInvalidField, "result", fmt.Sprintf("result exceeds %d bytes", store.MaxArgs))
	}
	return nil
}
