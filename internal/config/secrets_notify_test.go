package config

import (
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/observe/telemetry"
)

// TestNotifySecretsMasked: the notification channels' secrets are among the
// values masked by value everywhere Keel writes or serves.
func TestNotifySecretsMasked(t *testing.T) {
	env := map[string]string{
		"KEEL_NOTIFY_WEBHOOK_URL": "https://hook.example/x", "KEEL_NOTIFY_WEBHOOK_SECRET": "canary-webhook-secret",
		"KEEL_NOTIFY_SLACK_URL": "https://hooks.slack.example/canary-slack-path", "KEEL_NOTIFY_SMTP_ADDR": "127.0.0.1:25",
		"KEEL_NOTIFY_SMTP_FROM": "k@example.com", "KEEL_NOTIFY_SMTP_TO": "p@example.com",
		"KEEL_NOTIFY_SMTP_USER": "u", "KEEL_NOTIFY_SMTP_PASSWORD": "canary-smtp-password", "KEEL_NOTIFY_LINK_KEY": "canary-link-key-0123456789abcdef",
	}
	c, err := FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	text := "w=canary-webhook-secret s=https://hooks.slack.example/canary-slack-path p=canary-smtp-password l=canary-link-key-0123456789abcdef"
	if got := c.Secrets().String(text); strings.Contains(got, "canary") {
		t.Fatalf("masked: %q", got)
	}
}

// TestWebhookQueryTokenMasked: a token in the webhook URL's query (a
// receiver that takes its credential there) is masked by value, so the
// bundle's env.txt, which prints the URL, shows it as ****.
func TestWebhookQueryTokenMasked(t *testing.T) {
	env := map[string]string{"KEEL_NOTIFY_WEBHOOK_URL": "https://hook.example/x?team=ops&token=canary%2Bquery-token",
		"KEEL_NOTIFY_WEBHOOK_SECRET": "hmac-secret-0123"}
	c, err := FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	envTxt := telemetry.Env{Config: telemetry.MaskedConfig(c), Secrets: c.Secrets()}.Text(time.Now())
	if got := c.Secrets().String(envTxt); strings.Contains(got, "canary") || !strings.Contains(got, "Notify.WebhookURL=https://hook.example/x?team=ops&token=****") {
		t.Fatalf("env.txt, masked:\n%s", got)
	}
}

// TestNotifyBoundsRefused: a link key short enough to guess and a worker
// period short enough to spin are refused, naming the variable and never
// repeating the key; the smallest accepted values pass.
func TestNotifyBoundsRefused(t *testing.T) {
	cases := []struct {
		name, key, val, want string
	}{
		{"short link key", "KEEL_NOTIFY_LINK_KEY", "abc", "KEEL_NOTIFY_LINK_KEY: 3 bytes, want at least 32"},
		{"1ns interval", "KEEL_NOTIFY_INTERVAL", "1ns", `KEEL_NOTIFY_INTERVAL "1ns": want at least 100ms`},
		{"1ms backoff", "KEEL_NOTIFY_BACKOFF", "1ms", `KEEL_NOTIFY_BACKOFF "1ms": want at least 100ms`},
		{"shortest key", "KEEL_NOTIFY_LINK_KEY", strings.Repeat("k", 32), ""},
		{"shortest interval", "KEEL_NOTIFY_INTERVAL", "100ms", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromEnv(func(k string) string {
				if k == tc.key {
					return tc.val
				}
				return ""
			})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			case tc.key == "KEEL_NOTIFY_LINK_KEY" && err != nil && strings.Contains(err.Error(), tc.val):
				t.Fatalf("the error repeats the key: %v", err)
			}
		})
	}
}
