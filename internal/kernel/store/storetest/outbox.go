package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// testOutbox: a notification is written by the commit that names it, due
// at once, claimed by one worker per attempt, finished once; a fenced
// commit enqueues nothing; a link is used once and only with its hash.
func testOutbox(t *testing.T, e *env) {
	r, tok := e.leased()
	args := json.RawMessage(`{"to":"all@corp"}`)
	hash, _ := run.ArgsHash(args)
	note := run.Notification{ID: run.NotificationID("ap_1"), Kind: run.NotifyApproval, ApprovalID: "ap_1", Tool: "send_mail", ArgsHash: hash}
	c := store.Commit{RunID: r.ID, Token: tok, Run: &store.RunPatch{Status: run.StatusRunning},
		NewApprovals:  []run.Approval{{ID: "ap_1", Tool: "send_mail", Mode: run.ModeMutating, Args: args}},
		Notifications: []run.Notification{note}}
	_, err := e.s.Commit(e.ctx, c)
	must(t, err)
	// The same notification again (a retried commit) is left as it is.
	_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok, Notifications: []run.Notification{note}})
	must(t, err)

	list, err := e.s.ListNotifications(e.ctx, r.ID)
	must(t, err)
	if len(list) != 1 {
		t.Fatalf("notifications = %s", dump(list))
	}
	n := list[0]
	if n.RunID != r.ID || n.Status != run.NotificationPending || n.Kind != run.NotifyApproval || n.ApprovalID != "ap_1" ||
		n.ArgsHash != hash || n.Tool != "send_mail" || n.Attempts != 0 || !n.NextAttemptAt.Equal(epoch) || !n.CreatedAt.Equal(epoch) {
		t.Fatalf("notification stored as %s", dump(n))
	}
	due := e.due(1)[0]
	if due.ID != n.ID || due.RunID != r.ID {
		t.Fatalf("due = %s", dump(due))
	}

	t.Run("ClaimOnce", func(t *testing.T) {
		claim := n
		claim.Attempts, claim.NextAttemptAt = 1, e.clock.Now().Add(time.Minute)
		claim.LinkHash, claim.LinkExpiresAt = "linkhash-1", e.clock.Now().Add(72*time.Hour)
		must(t, e.s.UpdateNotification(e.ctx, claim, 0))
		wantErr(t, e.s.UpdateNotification(e.ctx, claim, 0), store.ErrConflict)
		e.due(0)
		e.clock.Advance(2 * time.Minute)
		if got := e.due(1)[0]; got.Attempts != 1 || got.LinkHash != "linkhash-1" || !got.LinkExpiresAt.Equal(epoch.Add(72*time.Hour)) {
			t.Fatalf("after a claim: %s", dump(got))
		}
	})
	t.Run("Link", func(t *testing.T) {
		at := e.clock.Now()
		link := func(id, h string) *store.LinkUse { return &store.LinkUse{NotificationID: id, Hash: h, At: at} }
		decide := func(apID string, l *store.LinkUse) (run.Approval, error) {
			return e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: apID, Approve: true, ArgsHash: hash,
				DecidedBy: "link:" + l.NotificationID, Link: l})
		}
		_, err := decide("ap_1", link(n.ID, "other"))
		wantErr(t, err, store.ErrNotFound)
		_, err = decide("ap_1", link("ntf-nope", "linkhash-1"))
		wantErr(t, err, store.ErrNotFound)
		if a, err := e.s.GetApproval(e.ctx, r.ID, "ap_1"); err != nil || a.Status != run.ApprovalPending {
			t.Fatalf("a refused link decided the approval: %s %v", dump(a), err)
		}
		// The decision and the link are one write.
		got, err := decide("ap_1", link(n.ID, "linkhash-1"))
		must(t, err)
		if got.Status != run.ApprovalApproved || got.DecidedBy != "link:"+n.ID {
			t.Fatalf("decided through the link: %s", dump(got))
		}
		list, err := e.s.ListNotifications(e.ctx, r.ID)
		must(t, err)
		if !list[0].LinkUsedAt.Equal(at) {
			t.Fatalf("the deciding write did not spend the link: %s", dump(list[0]))
		}
		_, err = decide("ap_1", link(n.ID, "linkhash-1"))
		wantErr(t, err, store.ErrLinkUsed)
		wantErr(t, err, store.ErrConflict)

		// An approval decided through another channel leaves its link unspent.
		note2 := run.Notification{ID: run.NotificationID("ap_2"), Kind: run.NotifyApproval, ApprovalID: "ap_2", Tool: "send_mail", ArgsHash: hash}
		_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok,
			NewApprovals:  []run.Approval{{ID: "ap_2", Tool: "send_mail", Mode: run.ModeMutating, Args: args}},
			Notifications: []run.Notification{note2}})
		must(t, err)
		claim := e.notification(r.ID, note2.ID)
		claim.Attempts, claim.NextAttemptAt = 1, at.Add(24*time.Hour)
		claim.LinkHash, claim.LinkExpiresAt = "linkhash-2", at.Add(time.Hour)
		must(t, e.s.UpdateNotification(e.ctx, claim, 0))
		_, err = e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap_2", Approve: false, ArgsHash: hash, DecidedBy: "alice"})
		must(t, err)
		_, err = decide("ap_2", link(note2.ID, "linkhash-2"))
		wantErr(t, err, store.ErrConflict)
		if errors.Is(err, store.ErrLinkUsed) {
			t.Fatalf("a decided approval reported as a used link: %v", err)
		}
		if got := e.notification(r.ID, note2.ID); !got.LinkUsedAt.IsZero() {
			t.Fatalf("a refused decision spent the link: %s", dump(got))
		}
	})
	t.Run("Finish", func(t *testing.T) {
		done := e.due(1)[0]
		done.Status, done.Delivered, done.LastError = run.NotificationDelivered, []string{"webhook", "slack"}, ""
		must(t, e.s.UpdateNotification(e.ctx, done, 1))
		e.due(0)
		wantErr(t, e.s.UpdateNotification(e.ctx, done, 1), store.ErrConflict)
		list, err := e.s.ListNotifications(e.ctx, r.ID)
		must(t, err)
		if got := list[0]; got.Status != run.NotificationDelivered || len(got.Delivered) != 2 || got.Delivered[1] != "slack" ||
			got.LinkUsedAt.IsZero() {
			t.Fatalf("finished: %s", dump(got))
		}
		gone := done
		gone.ID = "ntf-nope"
		wantErr(t, e.s.UpdateNotification(e.ctx, gone, 0), store.ErrNotFound)
	})
	t.Run("FencedCommitEnqueuesNothing", func(t *testing.T) {
		r2, tok2 := e.leased()
		_, err := e.s.Commit(e.ctx, store.Commit{RunID: r2.ID, Token: tok2 + 1, Run: &store.RunPatch{Status: run.StatusNeedsHuman},
			Notifications: []run.Notification{{ID: "ntf-nh", Kind: run.NotifyNeedsHuman}}})
		wantErr(t, err, store.ErrFenced)
		list, err := e.s.ListNotifications(e.ctx, r2.ID)
		must(t, err)
		if len(list) != 0 {
			t.Fatalf("a refused commit enqueued %s", dump(list))
		}
		_, err = e.s.ListNotifications(e.ctx, "run_unknown")
		wantErr(t, err, store.ErrNotFound)
		_, err = e.s.Commit(e.ctx, store.Commit{RunID: r2.ID, Token: tok2,
			Notifications: []run.Notification{{ID: "ntf-bad", Kind: run.NotifyApproval}}})
		wantErr(t, err, store.ErrInvalid)
	})
}

// notification returns the run's notification id, failing if it has none.
func (e *env) notification(runID, id string) run.Notification {
	e.t.Helper()
	list, err := e.s.ListNotifications(e.ctx, runID)
	must(e.t, err)
	for _, n := range list {
		if n.ID == id {
			return n
		}
	}
	e.t.Fatalf("run %s has no notification %s: %s", runID, id, dump(list))
	return run.Notification{}
}

// due returns the notifications due now, failing unless there are want.
func (e *env) due(want int) []run.Notification {
	e.t.Helper()
	got, err := e.s.DueNotifications(e.ctx, e.clock.Now(), 10)
	must(e.t, err)
	if len(got) != want {
		e.t.Fatalf("due notifications = %s, want %d", dump(got), want)
	}
	return got
}
