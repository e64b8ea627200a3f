package scrub_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/scrub"
)

func TestString(t *testing.T) {
	s := scrub.New("p@ss/w\"rd", "tok-123456", "", "abc")
	cases := []struct{ name, in, want string }{
		{"as is", "key tok-123456 here", "key **** here"},
		{"json escaped", `{"v":"p@ss/w\"rd"}`, `{"v":"****"}`},
		{"query escaped", "u=p%40ss%2Fw%22rd", "u=****"},
		{"too short to match", "abc", "abc"},
		{"none", "nothing secret", "nothing secret"},
		{"twice", "tok-123456tok-123456", "********"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := s.String(tc.in); got != tc.want {
				t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	if got := (scrub.Secrets{}).String("tok-123456"); got != "tok-123456" {
		t.Errorf("the zero Secrets masked %q", got)
	}
}

// TestHandler: a slog record's message, string, error and nested
// attributes, and attributes given to WithAttrs, are masked, in the text
// and the JSON handler.
func TestHandler(t *testing.T) {
	const secret = "canary-7f1d2c"
	s := scrub.New(secret)
	for name, mk := range map[string]func(*bytes.Buffer) slog.Handler{
		"text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		"json": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(scrub.Handler(mk(&buf), s)).With("pre", secret).WithGroup("g")
			log.Info("msg "+secret, "s", secret, "err", errors.New("failed with "+secret),
				slog.Group("nested", "v", map[string]string{"k": secret}), "n", 42)
			out := buf.String()
			if strings.Contains(out, secret) || strings.Count(out, scrub.Mask) != 5 || !strings.Contains(out, "42") {
				t.Errorf("log line %q", out)
			}
		})
	}
}

// TestMiddleware: JSON and text answers are masked; binary ones (an
// artifact, bound by its hash) pass as they are.
func TestMiddleware(t *testing.T) {
	const secret = "canary-7f1d2c"
	h := scrub.New(secret).Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", r.URL.Query().Get("ct"))
		w.Write([]byte(`{"v":"` + secret + `"}`))
	}))
	for ct, masked := range map[string]bool{"application/json": true, "text/event-stream": true, "text/plain; charset=utf-8": true, "application/octet-stream": false} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/?ct="+url.QueryEscape(ct), nil))
		if got := strings.Contains(rec.Body.String(), secret); got == masked {
			t.Errorf("%s: body %q", ct, rec.Body.String())
		}
	}
}
