package notify_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/keelrun/keel/internal/notify"
)

// TestRedirectNotFollowed: a receiver answering 307 to another URL (a
// loopback one here) does not get the signed body, link included, sent
// there: the attempt fails naming the status, and the target sees nothing.
func TestRedirectNotFollowed(t *testing.T) {
	var hits atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer target.Close()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/steal", http.StatusTemporaryRedirect)
	}))
	defer hook.Close()
	m := notify.Message{DeliveryID: "ntf-1", Kind: "approval_requested", RunID: "run_1", Tool: "send_mail",
		Args: []byte(`{"a":1}`), Link: "http://127.0.0.1:8080/approve/run_1.ntf-1.secret"}
	for _, ch := range []notify.Channel{&notify.Webhook{URL: hook.URL, Secret: []byte("k")}, &notify.Slack{URL: hook.URL},
		&notify.Webhook{URL: hook.URL, Secret: []byte("k"), Client: &http.Client{}}} {
		err := ch.Send(context.Background(), m)
		if err == nil || !strings.Contains(err.Error(), "307") {
			t.Errorf("%s: a 307 answered %v, want a failed attempt naming it", ch.Name(), err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the redirect's target got %d requests", n)
	}
}
