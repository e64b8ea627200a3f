package notify_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/notify"
)

// receiver is a webhook receiver on loopback that checks signatures and
// deduplicates by delivery id.
type receiver struct {
	mu     sync.Mutex
	fail   bool
	seen   map[string]notify.Message
	posts  int
	secret []byte
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.posts++
	if rc.fail {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	if err := notify.Verify(rc.secret, r.Header, body, time.Now(), 5*time.Minute); err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var m notify.Message
	if err := json.Unmarshal(body, &m); err != nil || m.DeliveryID != r.Header.Get(notify.HeaderDelivery) {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	rc.seen[m.DeliveryID] = m
}

func approvalRun(t *testing.T) (*sqlite.Store, run.Run) {
	t.Helper()
	ctx := t.Context()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "keel.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r, _, err := s.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "ses_1", Owner: "alice", Agent: "a", Request: "q"})
	if err == nil {
		r, err = s.AcquireLease(ctx, r.ID, "w1", time.Minute)
	}
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"to":"all@corp","note":"\u202eevil"}`)
	hash, _ := run.ArgsHash(args)
	_, err = s.Commit(ctx, store.Commit{RunID: r.ID, Token: r.Lease.Token, Run: &store.RunPatch{Status: run.StatusRunning},
		NewApprovals: []run.Approval{{ID: "ap_1", Tool: "send_mail", Mode: run.ModeMutating, Args: args}},
		Notifications: []run.Notification{{ID: run.NotificationID("ap_1"), Kind: run.NotifyApproval, ApprovalID: "ap_1",
			Tool: "send_mail", ArgsHash: hash}}})
	if err != nil {
		t.Fatal(err)
	}
	return s, r
}

// TestWebhookDeliveredOnceSigned: a signed delivery with the link, then
// nothing more to do.
func TestWebhookDeliveredOnceSigned(t *testing.T) {
	s, r := approvalRun(t)
	rc := &receiver{seen: map[string]notify.Message{}, secret: []byte("hmac-secret")}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	w := notify.NewWorker(s, notify.Options{Channels: []notify.Channel{&notify.Webhook{URL: srv.URL, Secret: rc.secret}},
		LinkKey: []byte("link-key-0123456789"), BaseURL: "http://127.0.0.1:1"})
	ctx := context.Background()
	for i, want := range []int{1, 0} {
		n, err := w.DeliverDue(ctx)
		if err != nil || n != want {
			t.Fatalf("round %d: attempted %d, %v; want %d", i, n, err, want)
		}
	}
	m, ok := rc.seen[run.NotificationID("ap_1")]
	if !ok || rc.posts != 1 || m.Tool != "send_mail" || m.ArgsHash == "" || m.Link == "" {
		t.Fatalf("receiver saw %d posts: %+v", rc.posts, rc.seen)
	}
	ns, err := s.ListNotifications(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, _, hash, ok := notify.ParseLink(m.Link[len("http://127.0.0.1:1"+notify.LinkPath):])
	if len(ns) != 1 || ns[0].Status != run.NotificationDelivered || !ok || ns[0].LinkHash != hash {
		t.Fatalf("stored %+v, link hash ok=%t", ns, ok)
	}
}

// TestFailingDeliveryFailsClosed: every attempt fails; the notification
// backs off, then fails with an event, and the approval stays pending.
func TestFailingDeliveryFailsClosed(t *testing.T) {
	s, r := approvalRun(t)
	rc := &receiver{seen: map[string]notify.Message{}, secret: []byte("k"), fail: true}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	now := time.Now()
	clock := func() time.Time { return now }
	w := notify.NewWorker(s, notify.Options{Channels: []notify.Channel{&notify.Webhook{URL: srv.URL, Secret: rc.secret}},
		MaxAttempts: 3, Backoff: time.Second, Clock: clock})
	ctx := context.Background()
	for i := range 3 {
		if n, err := w.DeliverDue(ctx); err != nil || n != 1 {
			t.Fatalf("attempt %d: %d, %v", i+1, n, err)
		}
		if n, _ := w.DeliverDue(ctx); n != 0 {
			t.Fatalf("attempt %d: due again before its backoff", i+1)
		}
		now = now.Add(time.Hour)
	}
	ns, _ := s.ListNotifications(ctx, r.ID)
	if len(ns) != 1 || ns[0].Status != run.NotificationFailed || ns[0].Attempts != 3 || ns[0].LastError == "" {
		t.Fatalf("after 3 failures: %+v", ns)
	}
	a, _ := s.GetApproval(ctx, r.ID, "ap_1")
	if a.Status != run.ApprovalPending {
		t.Fatalf("approval %s after failed delivery, want pending", a.Status)
	}
	evs, _ := s.ReadEvents(ctx, r.ID, 0, 100)
	if last := evs[len(evs)-1]; last.Type != run.EventNotificationFailed {
		t.Fatalf("last event %s, want notification_failed", last.Type)
	}
}
