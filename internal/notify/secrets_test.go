package notify_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/notify"
	"github.com/keelrun/keel/internal/scrub"
)

// TestSecretsMaskedInEveryChannel: a configured secret in the run's input
// and in an approval's arguments (one as a bare number, which masking
// turns into invalid JSON) reaches no channel: not the webhook body, not
// Slack, not the e-mail.
func TestSecretsMaskedInEveryChannel(t *testing.T) {
	const secret, numeric = "sk-canary-5f2e9a", "738194650021"
	ctx := t.Context()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "keel.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r, _, err := s.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "ses_1", Owner: "alice", Agent: "a",
		Request: "use the key " + secret + " for the report"})
	if err == nil {
		r, err = s.AcquireLease(ctx, r.ID, "w1", time.Minute)
	}
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"auth":"Bearer ` + secret + `","pin":` + numeric + `}`)
	hash, _ := run.ArgsHash(args)
	if _, err = s.Commit(ctx, store.Commit{RunID: r.ID, Token: r.Lease.Token, Run: &store.RunPatch{Status: run.StatusRunning},
		NewApprovals: []run.Approval{{ID: "ap_1", Tool: "call_api", Mode: run.ModeMutating, Args: args}},
		Notifications: []run.Notification{{ID: run.NotificationID("ap_1"), Kind: run.NotifyApproval, ApprovalID: "ap_1",
			Tool: "call_api", ArgsHash: hash}}}); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	defer srv.Close()
	box := &mailbox{}
	ms := smtp.NewServer(box)
	ms.Domain = "localhost"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = ms.Serve(ln) }()
	t.Cleanup(func() { _ = ms.Close() })

	w := notify.NewWorker(s, notify.Options{Channels: []notify.Channel{
		&notify.Webhook{URL: srv.URL + "/hook", Secret: []byte("hmac")}, &notify.Slack{URL: srv.URL + "/slack"},
		&notify.Email{Addr: ln.Addr().String(), From: "keel@example.test", To: []string{"ops@example.test"}}},
		LinkKey: []byte("link-key-0123456789-0123456789-01"), BaseURL: "http://127.0.0.1:1", Secrets: scrub.New(secret, numeric)})
	if n, err := w.DeliverDue(ctx); err != nil || n != 1 {
		t.Fatalf("delivered %d, %v", n, err)
	}
	box.mu.Lock()
	all := append(bodies, box.msgs...)
	box.mu.Unlock()
	if len(all) != 3 {
		t.Fatalf("%d messages, want 3", len(all))
	}
	for i, b := range all {
		if strings.Contains(b, secret) || strings.Contains(b, numeric) || !strings.Contains(b, scrub.Mask) {
			t.Errorf("message %d carries a secret (or masked nothing):\n%s", i, b)
		}
	}
	var m notify.Message
	if err := json.Unmarshal([]byte(bodies[0]), &m); err != nil || m.Link == "" || !strings.Contains(m.Request, "use the key") {
		t.Fatalf("webhook body %s: %v", bodies[0], err)
	}
}
