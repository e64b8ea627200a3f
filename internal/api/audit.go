package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// AuditExport is the body of GET /v1/runs/{id}/audit: a run's whole event
// log as stored, with the head of its hash chain, for verification offline.
// Every event field is a string except seq, exactly as hashed
// (run.EventHash): data is the event's stored bytes, time is
// run.EventTime. Verified and Problems are the server's own check; an
// auditor recomputes them (README, Auditing a run).
type AuditExport struct {
	RunID    string             `json:"run_id"`
	Status   run.Status         `json:"status"`
	Head     AuditHead          `json:"head"`
	Verified bool               `json:"verified"`
	Problems []run.ChainProblem `json:"problems"`
	// Corrupt is set when the chain has problems and the store's own
	// integrity check fails too (store.ErrCorrupt): the log was read
	// from a damaged database, so its problems say nothing of tampering.
	Corrupt string       `json:"corrupt,omitempty"`
	Events  []AuditEvent `json:"events"`
}

// AuditHead is the chain's head as the run row holds it: the seq and hash
// of the newest event. Kept elsewhere, it pins the whole log up to it.
type AuditHead struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// AuditEvent is one event of an AuditExport.
type AuditEvent struct {
	Seq         int64  `json:"seq"`
	Type        string `json:"type"`
	Time        string `json:"time"`
	PlanItemID  string `json:"plan_item_id"`
	OperationID string `json:"operation_id"`
	Data        string `json:"data"`
	PrevHash    string `json:"prev_hash"`
	Hash        string `json:"hash"`
	// HashDerived: the store keeps no hash of this event of its own (only
	// its commit's last one), so a change here is named as that span.
	HashDerived bool `json:"hash_derived,omitempty"`
}

// AuditOf builds the export of an audit.
func AuditOf(a store.Audit) AuditExport {
	out := AuditExport{RunID: a.Run.ID, Status: a.Run.Status, Head: AuditHead{Seq: a.Run.LastSeq, Hash: a.Run.LastHash},
		Verified: len(a.Problems) == 0, Problems: a.Problems, Events: make([]AuditEvent, 0, len(a.Events))}
	if out.Problems == nil {
		out.Problems = []run.ChainProblem{}
	}
	for _, e := range a.Events {
		out.Events = append(out.Events, AuditEvent{Seq: e.Seq, Type: string(e.Type), Time: run.EventTime(e.Time),
			PlanItemID: e.PlanItemID, OperationID: e.OperationID, Data: string(e.Data), PrevHash: e.PrevHash, Hash: e.Hash, HashDerived: e.HashDerived})
	}
	return out
}

// Recheck verifies an export on its own, trusting nothing the server said
// about it: the problems run.VerifyChain finds in its events and head.
func (x AuditExport) Recheck() ([]run.ChainProblem, error) {
	evs := make([]run.Event, 0, len(x.Events))
	for _, e := range x.Events {
		t, err := parseEventTime(e.Time)
		if err != nil {
			return nil, err
		}
		ev := run.Event{RunID: x.RunID, Seq: e.Seq, Type: run.EventType(e.Type), Time: t, PlanItemID: e.PlanItemID,
			OperationID: e.OperationID, PrevHash: e.PrevHash, Hash: e.Hash, HashDerived: e.HashDerived}
		if e.Data != "" {
			ev.Data = []byte(e.Data)
		}
		evs = append(evs, ev)
	}
	return run.VerifyChain(x.RunID, evs, x.Head.Seq, x.Head.Hash), nil
}

// audit serves GET /v1/runs/{id}/audit.
func (s *server) audit(w http.ResponseWriter, r *http.Request, principal string) {
	rr, ok := s.pathRun(w, r, principal)
	if !ok {
		return
	}
	a, err := store.ReadAudit(r.Context(), s.store, rr.ID)
	if err != nil {
		s.fail(w, r, "run", err)
		return
	}
	x := AuditOf(a)
	if ic, ok := s.store.(store.IntegrityChecker); ok && len(a.Problems) > 0 {
		if err := ic.CheckIntegrity(r.Context()); errors.Is(err, store.ErrCorrupt) {
			x.Corrupt = err.Error()
		}
	}
	writeJSON(w, http.StatusOK, x)
}

func parseEventTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("audit export: event time %q: %w", s, err)
	}
	return t, nil
}
