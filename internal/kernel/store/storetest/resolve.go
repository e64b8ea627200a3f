package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// testResolve: a person's decision on a run the version check stopped
// (an approval it cancelled, nothing to settle), in one write: with
// old_version the cancelled approval is pending again under its exact
// arguments, with deny every approval of a call not made is denied; either
// way the run is running with no error and no lease, so a worker takes
// it, and the log says who decided what. Refused, writing nothing, for a
// run that is not needs_human, one that waits on a needs_human operation,
// an unknown run, a malformed decision; of two decisions one wins.
func testResolve(t *testing.T, e *env) {
	args := json.RawMessage(`{"title":"Q3"}`)
	hash, _ := run.ArgsHash(args)
	f := resolveFixture{e: e, args: args, hash: hash}
	t.Run("OldVersion", f.oldVersion)
	t.Run("Deny", f.deny)
	t.Run("Once", f.once)
	t.Run("NotNeedsHuman", f.notNeedsHuman)
	t.Run("OperationNeedsHuman", f.operationNeedsHuman)
	t.Run("BadInput", f.badInput)
}

type resolveFixture struct {
	e    *env
	args json.RawMessage
	hash string
}

// blocked is a run stopped by the version check at an approval: another
// item's approval was given before (approved), and one of an item
// already answered stays as it is.
func (f resolveFixture) blocked(t *testing.T) run.Run {
	t.Helper()
	e, args, hash := f.e, f.args, f.hash
	r, tok := e.leased()
	wait := planItem("p1", 1, string(args), run.ModeMutating)
	wait.Tool, wait.Status = "publish", run.PlanAwaitingApproval
	given := planItem("p2", 2, string(args), run.ModeMutating)
	given.Tool, given.Status = "publish", run.PlanAwaitingApproval
	done := planItem("p3", 3, string(args), run.ModeMutating)
	done.Tool, done.Status = "publish", run.PlanDenied
	_, err := e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok, Run: &store.RunPatch{Status: run.StatusRunning},
		PlanItems: []run.PlanItem{wait, given, done},
		NewApprovals: []run.Approval{
			{ID: "ap_wait", PlanItemID: "p1", Tool: "publish", Mode: run.ModeMutating, Args: args},
			{ID: "ap_given", PlanItemID: "p2", Tool: "publish", Mode: run.ModeMutating, Args: args},
			{ID: "ap_done", PlanItemID: "p3", Tool: "publish", Mode: run.ModeMutating, Args: args}},
		Events: []run.Event{ev(run.EventApprovalRequested, "")}})
	must(t, err)
	_, err = e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap_given", Approve: true, ArgsHash: hash, DecidedBy: "carol"})
	must(t, err)
	_, err = e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap_done", Approve: false, ArgsHash: hash, DecidedBy: "carol"})
	must(t, err)
	why := "agent version v1 → v2: schema changed"
	_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok, CancelApprovals: []string{"ap_wait"},
		Run:    &store.RunPatch{Status: run.StatusNeedsHuman, Error: &why, ReleaseLease: true},
		Events: []run.Event{ev(run.EventApprovalCancelled, ""), ev(run.EventRunNeedsHuman, "")}})
	must(t, err)
	return r
}

func (f resolveFixture) statuses(t *testing.T, runID string) map[string]run.Approval {
	t.Helper()
	e := f.e
	aps, err := e.s.ListApprovals(e.ctx, runID)
	must(t, err)
	out := map[string]run.Approval{}
	for _, a := range aps {
		out[a.ID] = a
	}
	return out
}

// resolved checks the run after a resolution and returns its events.
func (f resolveFixture) resolved(t *testing.T, runID string, r run.Run, decision store.ResolveDecision) []run.Event {
	t.Helper()
	e := f.e
	if r.Status != run.StatusRunning || r.Error != "" || r.Lease.Owner != "" {
		t.Fatalf("after %s: status %s, error %q, lease %+v; want running, no error, no lease", decision, r.Status, r.Error, r.Lease)
	}
	stored, err := e.s.GetRun(e.ctx, runID)
	must(t, err)
	if stored.Status != run.StatusRunning || stored.Error != "" || stored.LastSeq != r.LastSeq {
		t.Fatalf("stored run %s", dump(stored))
	}
	evs := e.allEvents(e.s, runID)
	if _, err := e.s.AcquireLease(e.ctx, runID, "worker-2", time.Minute); err != nil {
		t.Fatalf("a worker cannot take the resolved run: %v", err)
	}
	return evs
}

func (f resolveFixture) oldVersion(t *testing.T) {
	e, hash := f.e, f.hash
	r := f.blocked(t)
	e.clock.Advance(time.Minute)
	got, err := e.s.ResolveRun(e.ctx, store.Resolution{RunID: r.ID, Decision: store.ResolveOldVersion, By: "alice", Reason: "v1 is back"})
	must(t, err)
	evs := f.resolved(t, r.ID, got, store.ResolveOldVersion)
	aps := f.statuses(t, r.ID)
	if a := aps["ap_wait"]; a.Status != run.ApprovalPending || a.DecidedBy != "" || a.Reason != "" || !a.DecidedAt.IsZero() || a.ArgsHash != hash {
		t.Fatalf("the cancelled approval: %s; want pending again, undecided, same hash", dump(a))
	}
	if aps["ap_given"].Status != run.ApprovalApproved || aps["ap_done"].Status != run.ApprovalDenied {
		t.Fatalf("decided approvals changed: %s", dump(aps))
	}
	last := evs[len(evs)-1]
	if last.Type != run.EventRunResolved || !jsonHas(last.Data, "by", "alice") || !jsonHas(last.Data, "decision", "old_version") {
		t.Fatalf("last event %s %s, want run_resolved by alice, old_version", last.Type, last.Data)
	}
}

func (f resolveFixture) deny(t *testing.T) {
	e := f.e
	r := f.blocked(t)
	e.clock.Advance(time.Minute)
	got, err := e.s.ResolveRun(e.ctx, store.Resolution{RunID: r.ID, Decision: store.ResolveDeny, By: "alice", Reason: "ask again under v2"})
	must(t, err)
	evs := f.resolved(t, r.ID, got, store.ResolveDeny)
	aps := f.statuses(t, r.ID)
	for _, id := range []string{"ap_wait", "ap_given"} {
		if a := aps[id]; a.Status != run.ApprovalDenied || a.DecidedBy != "alice" || a.Reason != "ask again under v2" || !a.DecidedAt.Equal(e.clock.Now()) {
			t.Fatalf("approval %s: %s; want denied by alice with the reason", id, dump(a))
		}
	}
	if a := aps["ap_done"]; a.DecidedBy != "carol" {
		t.Fatalf("the approval of an answered call changed: %s", dump(a))
	}
	var resolvedAt, denials int
	for i, ev := range evs {
		switch ev.Type {
		case run.EventRunResolved:
			resolvedAt = i
		case run.EventApprovalDenied:
			if jsonHas(ev.Data, "decided_by", "alice") {
				denials++
			}
		}
	}
	if resolvedAt == 0 || denials != 2 || !jsonHas(evs[resolvedAt].Data, "decision", "deny") {
		t.Fatalf("events %s: want run_resolved (deny) and two approval_denied by alice", dump(evs))
	}
}

func (f resolveFixture) once(t *testing.T) {
	e := f.e
	r := f.blocked(t)
	_, err := e.s.ResolveRun(e.ctx, store.Resolution{RunID: r.ID, Decision: store.ResolveDeny, By: "alice", Reason: "no"})
	must(t, err)
	before := e.snap(e.s, r.ID)
	_, err = e.s.ResolveRun(e.ctx, store.Resolution{RunID: r.ID, Decision: store.ResolveOldVersion, By: "bob", Reason: "yes"})
	wantErr(t, err, store.ErrConflict)
	e.sameSnap(before, e.snap(e.s, r.ID))
}

func (f resolveFixture) notNeedsHuman(t *testing.T) {
	e := f.e
	r, _ := e.leased()
	before := e.snap(e.s, r.ID)
	_, err := e.s.ResolveRun(e.ctx, store.Resolution{RunID: r.ID, Decision: store.ResolveDeny, By: "alice", Reason: "no"})
	wantErr(t, err, store.ErrConflict)
	e.sameSnap(before, e.snap(e.s, r.ID))
}

func (f resolveFixture) operationNeedsHuman(t *testing.T) {
	e := f.e
	r, tok := e.leased()
	_, err := e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok, Run: &store.RunPatch{Status: run.StatusRunning},
		NewOperations: []run.Operation{{ID: "op_u", PlanItemID: "p_u", Tool: "publish", Destination: "blog", ArgsHash: "h"}},
		Events:        []run.Event{ev(run.EventOpIntent, "")}})
	must(t, err)
	_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok,
		Run:              &store.RunPatch{Status: run.StatusNeedsHuman, ReleaseLease: true},
		OperationUpdates: []store.OperationUpdate{{ID: "op_u", Status: run.OpNeedsHuman, Error: "unknown outcome"}},
		Events:           []run.Event{ev(run.EventRunNeedsHuman, "")}})
	must(t, err)
	before := e.snap(e.s, r.ID)
	_, err = e.s.ResolveRun(e.ctx, store.Resolution{RunID: r.ID, Decision: store.ResolveOldVersion, By: "alice", Reason: "v1"})
	wantErr(t, err, store.ErrConflict)
	e.sameSnap(before, e.snap(e.s, r.ID))
}

func (f resolveFixture) badInput(t *testing.T) {
	e := f.e
	r := f.blocked(t)
	before := e.snap(e.s, r.ID)
	for _, res := range []store.Resolution{
		{RunID: r.ID, Decision: "approve", By: "alice", Reason: "x"},
		{RunID: r.ID, Decision: store.ResolveDeny, By: "", Reason: "x"},
		{RunID: r.ID, Decision: store.ResolveDeny, By: "alice", Reason: ""},
	} {
		_, err := e.s.ResolveRun(e.ctx, res)
		wantErr(t, err, store.ErrInvalid)
	}
	e.sameSnap(before, e.snap(e.s, r.ID))
	_, err := e.s.ResolveRun(e.ctx, store.Resolution{RunID: "run_nope", Decision: store.ResolveDeny, By: "alice", Reason: "x"})
	wantErr(t, err, store.ErrNotFound)
}
