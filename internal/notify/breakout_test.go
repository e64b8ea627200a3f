package notify_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/emersion/go-smtp"

	"github.com/keelrun/keel/internal/notify"
)

// TestRunTextCannotForgeAMessage: arguments and a reason that hold a code
// fence, Slack markup, a forged line and bidi characters arrive as text:
// the Slack args block has exactly its own two fences, the reason is plain
// text, and neither Slack nor the e-mail carries a raw bidi character or
// the forged line on a line of its own.
func TestRunTextCannotForgeAMessage(t *testing.T) {
	const forged = "*APPROVED* by security <https://evil.example|details>"
	args, _ := json.Marshal(map[string]string{"note": "x```\n" + forged + "\n```\u202eyaw-on"})
	approval := notify.Message{DeliveryID: "ntf-1", Kind: "approval_requested", RunID: "run_1", Tool: "send_mail",
		Args: args, ArgsHash: "sha256:abc"}
	human := notify.Message{DeliveryID: "ntf-2", Kind: "needs_human", RunID: "run_1", Reason: "tool failed\n" + forged + "\u202e"}

	var got []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p map[string]any
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			http.Error(w, "bad", http.StatusBadRequest)
		}
		got = append(got, p)
	}))
	defer srv.Close()
	for _, m := range []notify.Message{approval, human} {
		if err := (&notify.Slack{URL: srv.URL}).Send(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range got {
		blocks := p["blocks"].([]any)
		sec := blocks[1].(map[string]any)["text"].(map[string]any)
		text := sec["text"].(string)
		if strings.ContainsRune(text, '\u202e') || strings.Contains(text, "\n"+forged) {
			t.Errorf("slack message %d: %q", i, text)
		}
		if i == 0 && strings.Count(text, "```") != 2 {
			t.Errorf("slack args block has %d fences, want its own 2: %q", strings.Count(text, "```"), text)
		}
		if i == 1 && sec["type"] != "plain_text" {
			t.Errorf("slack reason is %v, want plain_text", sec["type"])
		}
	}

	box := &mailbox{}
	ms := smtp.NewServer(box)
	ms.Domain = "localhost"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = ms.Serve(ln) }()
	t.Cleanup(func() { _ = ms.Close() })
	e := &notify.Email{Addr: ln.Addr().String(), From: "keel@example.test", To: []string{"ops@example.test"}}
	for _, m := range []notify.Message{approval, human} {
		if err := e.Send(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	box.mu.Lock()
	defer box.mu.Unlock()
	for i, msg := range box.msgs {
		if strings.ContainsRune(msg, '\u202e') || strings.Contains(msg, "\n"+forged) || !strings.Contains(msg, `\u202e`) {
			t.Errorf("e-mail %d:\n%s", i, msg)
		}
	}
}
