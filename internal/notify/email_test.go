package notify_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/emersion/go-smtp"

	"github.com/keelrun/keel/internal/notify"
)

// mailbox is a go-smtp backend that keeps every message it accepts.
type mailbox struct {
	mu   sync.Mutex
	msgs []string
	rcpt []string
}

func (b *mailbox) NewSession(*smtp.Conn) (smtp.Session, error) { return &mailSession{b: b}, nil }

type mailSession struct{ b *mailbox }

func (s *mailSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *mailSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	s.b.rcpt = append(s.b.rcpt, to)
	return nil
}
func (s *mailSession) Data(r io.Reader) error {
	body, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	s.b.msgs = append(s.b.msgs, string(body))
	return nil
}
func (s *mailSession) Reset()        {}
func (s *mailSession) Logout() error { return nil }

// TestEmailOverSMTP: a real SMTP server on loopback receives the message,
// its Message-ID the delivery id, its body the link.
func TestEmailOverSMTP(t *testing.T) {
	box := &mailbox{}
	srv := smtp.NewServer(box)
	srv.Domain = "localhost"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	e := &notify.Email{Addr: ln.Addr().String(), From: "keel@example.test", To: []string{"ops@example.test"}}
	m := notify.Message{DeliveryID: "ntf-apr_1", Kind: "approval_requested", RunID: "run_1", Tool: "send_mail",
		Args: []byte(`{"to":"all@corp"}`), ArgsHash: "sha256:abc", Link: "http://127.0.0.1:8080/approve/x.y.z"}
	if err := e.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	box.mu.Lock()
	defer box.mu.Unlock()
	if len(box.msgs) != 1 || len(box.rcpt) != 1 || box.rcpt[0] != "ops@example.test" {
		t.Fatalf("mailbox: %d messages to %v", len(box.msgs), box.rcpt)
	}
	got := box.msgs[0]
	for _, want := range []string{"Message-ID: <ntf-apr_1@keel>", "send_mail", "sha256:abc", m.Link} {
		if !strings.Contains(got, want) {
			t.Fatalf("message lacks %q:\n%s", want, got)
		}
	}
}
