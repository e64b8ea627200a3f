package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/notify"
)

// TestLinkKeyRotationRevokes: a link sent under one link key works while
// that key is current, and is refused as revoked (410, naming the other
// ways to decide) once the deployment's key changed; the approval stays
// pending.
func TestLinkKeyRotationRevokes(t *testing.T) {
	e := newEnv(t, nil)
	r := e.newRun("alice", run.InputQueue)
	a := e.awaitApproval(r.ID, `{"title":"hi"}`)
	path := e.link(a, a.ArgsHash, time.Hour) // sent under test-link-key-0123456789
	serve := func(key string) string {
		w := notify.NewWorker(e.store, notify.Options{LinkKey: []byte(key), BaseURL: e.srv.URL})
		h, err := api.New(api.Deps{Store: e.store, Starter: e.starter, Resumer: e.resumer, Auth: api.Tokens{},
			Agents: api.AgentSet{}, Links: w})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	get := func(base string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get(serve("test-link-key-0123456789")); code != http.StatusOK {
		t.Fatalf("under the key it was sent with: %d, want 200", code)
	}
	rotated := serve("rotated-link-key-0123456789abcdef0123")
	if code, body := get(rotated); code != http.StatusGone || !strings.Contains(body, "revoked") {
		t.Fatalf("after rotation: %d %s, want 410 revoked", code, body)
	}
	resp, err := http.PostForm(rotated+path, map[string][]string{"decision": {"approve"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got, _ := e.store.GetApproval(context.Background(), r.ID, a.ID)
	if resp.StatusCode != http.StatusGone || got.Status != run.ApprovalPending {
		t.Fatalf("approve after rotation: %d, approval %s", resp.StatusCode, got.Status)
	}
}
