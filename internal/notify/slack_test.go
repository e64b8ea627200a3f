package notify_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/notify"
)

// TestSlackIncomingWebhook: the message arrives as text and blocks with a
// button to the link; a failure's error never shows the (secret) URL.
func TestSlackIncomingWebhook(t *testing.T) {
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			http.Error(w, "bad", http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	m := notify.Message{DeliveryID: "ntf-1", Kind: "approval_requested", RunID: "run_1", Tool: "send<mail>",
		Args: []byte(`{"a":1}`), ArgsHash: "sha256:abc", Link: "http://127.0.0.1:8080/approve/t"}
	secretURL := srv.URL + "/services/T000/B000/XXXXSECRET"
	if err := (&notify.Slack{URL: secretURL}).Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(got)
	for _, want := range []string{`send\u0026lt;mail\u0026gt;`, "sha256:abc", m.Link, `"blocks"`} {
		if !strings.Contains(string(raw), want) {
			t.Fatalf("payload lacks %s: %s", want, raw)
		}
	}
	srv.Close()
	err := (&notify.Slack{URL: secretURL}).Send(context.Background(), m)
	if err == nil || strings.Contains(err.Error(), "XXXXSECRET") {
		t.Fatalf("error on a closed server: %v", err)
	}
}
