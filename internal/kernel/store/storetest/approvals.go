// The conformance tests of approvals: creation, decisions and their races (split from records.go to keep files short).

package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

func testApprovals(t *testing.T, e *env) {
	r, tok := e.leased()
	mutArgs := json.RawMessage(`{"to":"all@corp","subject":"Q3"}`)
	onceArgs := json.RawMessage(`{"query":"revenue"}`)
	_, err := e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok,
		Run: &store.RunPatch{Status: run.StatusRunning},
		NewApprovals: []run.Approval{
			{ID: "ap_mut", PlanItemID: "p1", Tool: "send_mail", Mode: run.ModeMutating, Args: mutArgs},
			{ID: "ap_once", PlanItemID: "p2", Tool: "crm_search", Mode: run.ModeConfirmOnce, Args: onceArgs},
			{ID: "ap_deny", PlanItemID: "p3", Tool: "delete_all", Mode: run.ModeMutating, Args: json.RawMessage(`{}`)},
		},
		Events: []run.Event{ev(run.EventApprovalRequested, "")}})
	must(t, err)
	mutHash, _ := run.ArgsHash(mutArgs)
	a, err := e.s.GetApproval(e.ctx, r.ID, "ap_mut")
	must(t, err)
	if a.Status != run.ApprovalPending || a.ArgsHash != mutHash || a.SessionID != r.SessionID || a.RunID != r.ID ||
		string(a.Args) != string(mutArgs) || a.Mode != run.ModeMutating || !a.CreatedAt.Equal(epoch) {
		t.Fatalf("approval stored as %s", dump(a))
	}
	list, err := e.s.ListApprovals(e.ctx, r.ID)
	must(t, err)
	if len(list) != 3 || list[0].ID != "ap_mut" || list[2].ID != "ap_deny" {
		t.Fatalf("approvals = %s", dump(list))
	}

	t.Run("TaskToken", func(t *testing.T) {
		a, err := e.s.AttachTaskToken(e.ctx, r.ID, "ap_mut", "tok-abc")
		must(t, err)
		if a.TaskToken != "tok-abc" || a.Status != run.ApprovalPending {
			t.Fatalf("after attach: %s", dump(a))
		}
		_, err = e.s.AttachTaskToken(e.ctx, r.ID, "ap_nope", "tok")
		wantErr(t, err, store.ErrNotFound)
	})
	t.Run("WrongHash", func(t *testing.T) {
		before := e.snap(e.s, r.ID)
		otherHash, _ := run.ArgsHash([]byte(`{"to":"ceo@corp","subject":"Q3"}`))
		_, err := e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap_mut", Approve: true, ArgsHash: otherHash, DecidedBy: "carol"})
		wantErr(t, err, store.ErrHashMismatch)
		e.sameSnap(before, e.snap(e.s, r.ID))
	})
	t.Run("Approve", func(t *testing.T) {
		e.clock.Advance(time.Hour)
		a, err := e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap_mut", Approve: true, ArgsHash: mutHash, DecidedBy: "carol", Reason: "looks right"})
		must(t, err)
		if a.Status != run.ApprovalApproved || a.DecidedBy != "carol" || a.Reason != "looks right" || a.TaskToken != "tok-abc" || !a.DecidedAt.Equal(e.clock.Now()) {
			t.Fatalf("decided approval = %s", dump(a))
		}
		evs := e.checkGapless(e.s, r.ID)
		last := evs[len(evs)-1]
		if last.Type != run.EventApprovalGranted || last.PlanItemID != "p1" {
			t.Fatalf("last event = %s, want approval_granted for p1", dump(last))
		}
		// A mutating approval never grants the session anything.
		has, err := e.s.HasGrant(e.ctx, r.SessionID, "send_mail")
		must(t, err)
		if has {
			t.Fatal("mutating approval created a grant")
		}
	})
	t.Run("LegacyHashStillDecides", func(t *testing.T) {
		// An approval stored by a Keel whose hashes had no version prefix.
		args := json.RawMessage(`{"amount":12.50,"to":"acct-1"}`)
		legacy, err := run.LegacyArgsHash(args)
		must(t, err)
		_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok,
			NewApprovals: []run.Approval{{ID: "ap_legacy", PlanItemID: "p9", Tool: "pay", Mode: run.ModeMutating, Args: args, ArgsHash: legacy}},
			Events:       []run.Event{ev(run.EventApprovalRequested, "")}})
		must(t, err)
		a, err := e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap_legacy", Approve: true, ArgsHash: legacy, DecidedBy: "carol"})
		must(t, err)
		if a.Status != run.ApprovalApproved || a.ArgsHash != legacy {
			t.Fatalf("legacy approval decided as %s", dump(a))
		}
	})
	t.Run("DecideTwice", func(t *testing.T) {
		before := e.snap(e.s, r.ID)
		_, err := e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap_mut", Approve: false, ArgsHash: mutHash, DecidedBy: "dave"})
		wantErr(t, err, store.ErrConflict)
		e.sameSnap(before, e.snap(e.s, r.ID))
		// The token can still be read from a decided approval.
		a, err := e.s.AttachTaskToken(e.ctx, r.ID, "ap_mut", "tok-abc")
		must(t, err)
		if a.Status != run.ApprovalApproved {
			t.Fatalf("status %s", a.Status)
		}
	})
	t.Run("ConfirmOnceGrants", func(t *testing.T) {
		has, err := e.s.HasGrant(e.ctx, r.SessionID, "crm_search")
		must(t, err)
		if has {
			t.Fatal("grant before decision")
		}
		onceHash, _ := run.ArgsHash(onceArgs)
		_, err = e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap_once", Approve: true, ArgsHash: onceHash, DecidedBy: "carol"})
		must(t, err)
		has, err = e.s.HasGrant(e.ctx, r.SessionID, "crm_search")
		must(t, err)
		if !has {
			t.Fatal("approved confirm_once created no grant")
		}
		for _, q := range [][2]string{{"sess-other", "crm_search"}, {r.SessionID, "send_mail"}} {
			has, err := e.s.HasGrant(e.ctx, q[0], q[1])
			must(t, err)
			if has {
				t.Fatalf("grant leaked to %v", q)
			}
		}
	})
	t.Run("Deny", func(t *testing.T) {
		h, _ := run.ArgsHash([]byte(`{}`))
		a, err := e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap_deny", Approve: false, ArgsHash: h, DecidedBy: "carol", Reason: "no"})
		must(t, err)
		if a.Status != run.ApprovalDenied {
			t.Fatalf("status %s", a.Status)
		}
		evs := e.checkGapless(e.s, r.ID)
		if evs[len(evs)-1].Type != run.EventApprovalDenied {
			t.Fatalf("last event %s", evs[len(evs)-1].Type)
		}
	})
	t.Run("Unknown", func(t *testing.T) {
		_, err := e.s.GetApproval(e.ctx, r.ID, "ap_nope")
		wantErr(t, err, store.ErrNotFound)
		_, err = e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap_nope", Approve: true, ArgsHash: mutHash, DecidedBy: "c"})
		wantErr(t, err, store.ErrNotFound)
	})
}
