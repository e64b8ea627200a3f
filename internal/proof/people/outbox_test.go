package people

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/notify"
	"github.com/keelrun/keel/internal/testbin"
)

// TestNotificationSurvivesSIGKILL: keel dev kills itself with SIGKILL at
// the fault point right after the commit that requests the approval (and
// writes its notification) and before any delivery; the receiver has seen
// nothing. Restarted on the same data, keel dev delivers it: the receiver
// answers the first attempt 503, the retry carries the same delivery id
// (the notification's, ntf-APPROVAL), and the receiver keeps exactly one
// message, whose link then approves once and the run completes.
func TestNotificationSurvivesSIGKILL(t *testing.T) {
	testbin.SkipShort(t, "builds a program and kills keel dev")
	dir := t.TempDir()
	bin := buildAgent(t, dir)
	rc := &receiver{secret: []byte("hook-secret-for-the-test"), got: map[string]notify.Message{}, failFirst: 1}
	hook := httptest.NewServer(rc)
	t.Cleanup(hook.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard
	t.Cleanup(cancel)
	data := filepath.Join(dir, "data")
	env := []string{"KEEL_NOTIFY_WEBHOOK_URL=" + hook.URL, "KEEL_NOTIFY_WEBHOOK_SECRET=" + string(rc.secret),
		"KEEL_NOTIFY_INTERVAL=200ms", "KEEL_NOTIFY_BACKOFF=200ms"}

	cl, exited := startDevProc(ctx, t, bin, data, append(env, "KEEL_FAULTPOINT=await_approval")...)
	r, _, err := cl.CreateRun(ctx, api.CreateRunRequest{Agent: "budget", Input: "look them up"}, "")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-ctx.Done():
		t.Fatal("keel dev did not reach the fault point")
	}
	rc.mu.Lock()
	before := len(rc.attempts)
	rc.mu.Unlock()
	if before != 0 {
		t.Fatalf("%d delivery attempts before the kill: the test would prove nothing", before)
	}

	cl = startDev(ctx, t, bin, data, env...)
	aps, err := cl.ListApprovals(ctx, r.RunID)
	if err != nil || len(aps) != 1 || aps[0].Status != run.ApprovalPending {
		t.Fatalf("approvals after the restart %+v %v", aps, err)
	}
	var msg notify.Message
	for ok := false; !ok; {
		if msg, ok = rc.approval(aps[0].ApprovalID); !ok {
			sleep(ctx, t, 100*time.Millisecond)
		}
	}
	rc.mu.Lock()
	attempts, kept := append([]string(nil), rc.attempts...), len(rc.got)
	rc.mu.Unlock()
	want := run.NotificationID(aps[0].ApprovalID)
	if len(attempts) < 2 || kept != 1 || msg.DeliveryID != want {
		t.Fatalf("attempts %v, kept %d, delivery id %q, want %q", attempts, kept, msg.DeliveryID, want)
	}
	for _, id := range attempts {
		if id != want {
			t.Fatalf("delivery id changed across the retry: %v", attempts)
		}
	}
	t.Logf("delivered after the restart: %d attempts, all with delivery id %s", len(attempts), want)
	if code := postLink(t, msg.Link, "approve"); code != http.StatusOK {
		t.Fatalf("link approve: %d", code)
	}
	// The link works once: another decision through it is refused (the
	// same one again is answered with the recorded decision, a retry).
	if code := postLink(t, msg.Link, "deny"); code == http.StatusOK {
		t.Fatal("the link decided twice")
	}
	waitRun(ctx, t, cl, r.RunID, run.StatusCompleted)
	notes, err := cl.Notifications(ctx, r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range notes {
		if n.ID == want && n.Status != run.NotificationDelivered {
			t.Fatalf("notification %+v", n)
		}
	}
}
