package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Notify configures how notifications (approvals requested, runs gone
// needs_human) reach people, for the whole deployment. Fields ending in
// Secret, Password or Key are credentials: masked in debug bundles, never
// written to records, events or logs. No channel set: notifications are
// still written to the outbox, and delivered (to nobody) at once.
type Notify struct {
	// WebhookURL is KEEL_NOTIFY_WEBHOOK_URL: each notification is POSTed
	// there as JSON, signed with WebhookSecret (KEEL_NOTIFY_WEBHOOK_SECRET,
	// required with a URL).
	WebhookURL, WebhookSecret string
	// SlackSecret is KEEL_NOTIFY_SLACK_URL: a Slack incoming-webhook URL,
	// which is itself the credential.
	SlackSecret string
	// SMTPAddr (KEEL_NOTIFY_SMTP_ADDR, host:port), SMTPFrom
	// (KEEL_NOTIFY_SMTP_FROM), SMTPTo (KEEL_NOTIFY_SMTP_TO, comma-separated):
	// e-mail. SMTPUser and SMTPPassword (KEEL_NOTIFY_SMTP_USER,
	// KEEL_NOTIFY_SMTP_PASSWORD) authenticate when set.
	SMTPAddr, SMTPFrom     string
	SMTPTo                 []string
	SMTPUser, SMTPPassword string
	// LinkKey is KEEL_NOTIFY_LINK_KEY: the key approval links are derived
	// from, at least MinLinkKey bytes (a short key can be guessed, and
	// with it every link forged). Empty on keel dev: a random key kept in
	// DataDir/link.key. Changing it revokes every link sent under the old
	// one.
	LinkKey string
	// BaseURL is KEEL_NOTIFY_BASE_URL: where people reach this
	// deployment's HTTP server, the start of every approval link. Empty on
	// keel dev: http://Addr.
	BaseURL string
	// LinkTTL is KEEL_NOTIFY_LINK_TTL (default 72h): how long a link works.
	LinkTTL time.Duration
	// MaxAttempts is KEEL_NOTIFY_MAX_ATTEMPTS (default 8): attempts before
	// a notification is failed (its approval stays pending).
	MaxAttempts int64
	// Backoff is KEEL_NOTIFY_BACKOFF (default 5s, at least
	// MinNotifyPeriod): the wait after the first failed attempt, doubled
	// after each next one up to 10m.
	Backoff time.Duration
	// Interval is KEEL_NOTIFY_INTERVAL (default 2s, at least
	// MinNotifyPeriod): how often keel dev's worker looks for due
	// notifications.
	Interval time.Duration
}

// MinLinkKey is the shortest KEEL_NOTIFY_LINK_KEY accepted: 32 bytes, what
// `openssl rand -hex 16` prints, and what keel dev's own key exceeds.
const MinLinkKey = 32

// MinNotifyPeriod is the shortest KEEL_NOTIFY_INTERVAL and
// KEEL_NOTIFY_BACKOFF accepted: a shorter one turns the worker into a
// loop that reads the store, or posts to a failing receiver, as fast as
// it can.
const MinNotifyPeriod = 100 * time.Millisecond

func parseNotify(get func(string) string) (Notify, error) {
	n := Notify{
		WebhookURL: get("KEEL_NOTIFY_WEBHOOK_URL"), WebhookSecret: get("KEEL_NOTIFY_WEBHOOK_SECRET"),
		SlackSecret: get("KEEL_NOTIFY_SLACK_URL"), SMTPAddr: get("KEEL_NOTIFY_SMTP_ADDR"),
		SMTPFrom: get("KEEL_NOTIFY_SMTP_FROM"), SMTPUser: get("KEEL_NOTIFY_SMTP_USER"),
		SMTPPassword: get("KEEL_NOTIFY_SMTP_PASSWORD"), LinkKey: get("KEEL_NOTIFY_LINK_KEY"),
		BaseURL: get("KEEL_NOTIFY_BASE_URL"),
	}
	for _, to := range strings.Split(get("KEEL_NOTIFY_SMTP_TO"), ",") {
		if to = strings.TrimSpace(to); to != "" {
			n.SMTPTo = append(n.SMTPTo, to)
		}
	}
	var err error
	for _, d := range []struct {
		name string
		to   *time.Duration
	}{{"KEEL_NOTIFY_LINK_TTL", &n.LinkTTL}, {"KEEL_NOTIFY_BACKOFF", &n.Backoff}, {"KEEL_NOTIFY_INTERVAL", &n.Interval}} {
		if *d.to, err = duration(d.name, get(d.name)); err != nil {
			return n, err
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"KEEL_NOTIFY_BACKOFF", n.Backoff}, {"KEEL_NOTIFY_INTERVAL", n.Interval}} {
		if d.v != 0 && d.v < MinNotifyPeriod {
			return n, fmt.Errorf("%s %q: want at least %s", d.name, get(d.name), MinNotifyPeriod)
		}
	}
	if n.LinkKey != "" && len(n.LinkKey) < MinLinkKey {
		// The message never repeats the key.
		return n, fmt.Errorf("KEEL_NOTIFY_LINK_KEY: %d bytes, want at least %d (e.g. the output of `openssl rand -hex 32`)", len(n.LinkKey), MinLinkKey)
	}
	if s := get("KEEL_NOTIFY_MAX_ATTEMPTS"); s != "" {
		if n.MaxAttempts, err = strconv.ParseInt(s, 10, 64); err != nil || n.MaxAttempts < 1 {
			return n, fmt.Errorf("KEEL_NOTIFY_MAX_ATTEMPTS %q: want a whole number of at least 1", s)
		}
	}
	return n, n.validate()
}

// validate checks combinations; messages never repeat a secret's value.
func (n Notify) validate() error {
	for _, u := range []struct{ name, v string }{{"KEEL_NOTIFY_WEBHOOK_URL", n.WebhookURL}, {"KEEL_NOTIFY_BASE_URL", n.BaseURL}} {
		if u.v == "" {
			continue
		}
		if p, err := url.Parse(u.v); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("%s %q: want an http or https URL", u.name, u.v)
		}
	}
	if n.WebhookURL != "" && n.WebhookSecret == "" {
		return fmt.Errorf("KEEL_NOTIFY_WEBHOOK_SECRET is required with KEEL_NOTIFY_WEBHOOK_URL: deliveries are signed")
	}
	if n.SlackSecret != "" {
		if p, err := url.Parse(n.SlackSecret); err != nil || p.Scheme != "https" && p.Scheme != "http" {
			return fmt.Errorf("KEEL_NOTIFY_SLACK_URL: want the incoming webhook's URL")
		}
	}
	if n.SMTPAddr != "" {
		if _, _, err := net.SplitHostPort(n.SMTPAddr); err != nil {
			return fmt.Errorf("KEEL_NOTIFY_SMTP_ADDR %q: want host:port", n.SMTPAddr)
		}
		if n.SMTPFrom == "" || len(n.SMTPTo) == 0 {
			return fmt.Errorf("KEEL_NOTIFY_SMTP_FROM and KEEL_NOTIFY_SMTP_TO are required with KEEL_NOTIFY_SMTP_ADDR")
		}
	}
	return nil
}
