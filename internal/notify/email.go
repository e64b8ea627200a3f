package notify

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/smtp"
	"strings"
	"time"
)

// Email sends each message as a plain-text e-mail over SMTP (STARTTLS when
// the server offers it; PLAIN auth when Username is set, which net/smtp
// allows only over TLS or to localhost). The password never appears in an
// error.
type Email struct {
	Addr     string // host:port
	From     string
	To       []string
	Username string
	Password string
	Clock    func() time.Time
}

var _ Channel = (*Email)(nil)

// Name implements Channel.
func (e *Email) Name() string { return "email" }

// Send implements Channel. The Message-ID is the delivery id, so a mail
// client can tell a repeated delivery.
func (e *Email) Send(ctx context.Context, m Message) error {
	if len(e.To) == 0 || e.From == "" {
		return errors.New("no sender or recipients")
	}
	host, _, err := net.SplitHostPort(e.Addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", e.Addr, err)
	}
	var auth smtp.Auth
	if e.Username != "" {
		auth = smtp.PlainAuth("", e.Username, e.Password, host)
	}
	now := time.Now
	if e.Clock != nil {
		now = e.Clock
	}
	headers := []string{
		"From: " + e.From,
		"To: " + strings.Join(e.To, ", "),
		"Subject: " + mime.QEncoding.Encode("utf-8", m.Subject()),
		"Date: " + now().UTC().Format(time.RFC1123Z),
		"Message-ID: <" + m.DeliveryID + "@keel>",
		"MIME-Version: 1.0",
		"Content-Type: text/plain; charset=utf-8",
		"Content-Transfer-Encoding: 8bit",
	}
	body := strings.ReplaceAll(m.Text(), "\n", "\r\n")
	msg := []byte(strings.Join(headers, "\r\n") + "\r\n\r\n" + body)
	done := make(chan error, 1)
	go func() { done <- smtp.SendMail(e.Addr, auth, e.From, e.To, msg) }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("smtp: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("smtp: %w", ctx.Err())
	}
}
