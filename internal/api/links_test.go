package api_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/notify"
)

// link enqueues a notification for approval a bound to hash, has a worker
// (no channels) derive its link with ttl, and returns the link's path.
func (e *env) link(a run.Approval, hash string, ttl time.Duration) string {
	e.t.Helper()
	n := run.Notification{ID: run.NotificationID(a.ID), Kind: run.NotifyApproval, ApprovalID: a.ID, Tool: a.Tool, ArgsHash: hash}
	e.commit(a.RunID, store.Commit{Notifications: []run.Notification{n}})
	key := []byte("test-link-key-0123456789")
	w := notify.NewWorker(e.store, notify.Options{LinkKey: key, BaseURL: e.srv.URL, LinkTTL: ttl})
	if _, err := w.DeliverDue(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	n.RunID = a.RunID
	return notify.LinkPath + notify.LinkToken(key, n)
}

func (e *env) postLink(path, decision string) (int, string) {
	e.t.Helper()
	resp, err := http.PostForm(e.srv.URL+path, url.Values{"decision": {decision}})
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestApprovalLink: the page shows the exact action with invisible
// characters escaped; the link approves once, then refuses; an expired link
// and a link for other args refuse; a bad token is not found.
func TestApprovalLink(t *testing.T) {
	e := newEnv(t, nil)
	r := e.newRun("alice", run.InputQueue)
	a := e.awaitApproval(r.ID, `{"title":"hi\u202egnp.exe"}`)
	path := e.link(a, a.ArgsHash, time.Hour)

	code, _, body := e.do("GET", path, "", "", nil)
	if code != http.StatusOK || !strings.Contains(string(body), `\u202e`) || !strings.Contains(string(body), a.ArgsHash) ||
		!strings.Contains(string(body), `id="approve"`) {
		t.Fatalf("page: %d %s", code, body)
	}
	if code, body := e.postLink(path, "approve"); code != http.StatusOK || !strings.Contains(body, "approved") {
		t.Fatalf("approve: %d %s", code, body)
	}
	got, _ := e.store.GetApproval(context.Background(), r.ID, a.ID)
	if got.Status != run.ApprovalApproved || !strings.HasPrefix(got.DecidedBy, "link:") || len(e.resumer.Calls()) != 1 {
		t.Fatalf("after the link: %+v, resumes %d", got, len(e.resumer.Calls()))
	}
	if code, _ := e.postLink(path, "deny"); code != http.StatusGone {
		t.Fatalf("second use with another decision: %d, want 410", code)
	}
	// The same decision again (a retry after a crash or a lost answer)
	// is answered with the decision and wakes the run once more.
	if code, body := e.postLink(path, "approve"); code != http.StatusOK || !strings.Contains(body, "Recorded: approved") ||
		len(e.resumer.Calls()) != 2 {
		t.Fatalf("retried link: %d %s, resumes %d", code, body, len(e.resumer.Calls()))
	}
	if strings.Contains(e.logs.String(), path) {
		t.Fatal("the link token reached the request log")
	}

	r2 := e.newRun("alice", run.InputQueue)
	a2 := e.awaitApproval(r2.ID, `{"title":"b"}`)
	if code, _ := e.postLink(e.link(a2, a2.ArgsHash, time.Nanosecond), "approve"); code != http.StatusGone {
		t.Fatalf("expired link: %d, want 410", code)
	}
	r3 := e.newRun("alice", run.InputQueue)
	a3 := e.awaitApproval(r3.ID, `{"title":"c"}`)
	stale, _ := run.ArgsHash([]byte(`{"title":"old"}`))
	if code, _ := e.postLink(e.link(a3, stale, time.Hour), "approve"); code != http.StatusConflict {
		t.Fatalf("stale args link: %d, want 409", code)
	}
	for _, ap := range []run.Approval{a2, a3} {
		if got, _ := e.store.GetApproval(context.Background(), ap.RunID, ap.ID); got.Status != run.ApprovalPending {
			t.Fatalf("refused link left %s", got.Status)
		}
	}
	if code, _ := e.postLink(notify.LinkPath+r.ID+".ntf-x."+strings.Repeat("A", 43), "approve"); code != http.StatusNotFound {
		t.Fatalf("forged link: %d, want 404", code)
	}
}
