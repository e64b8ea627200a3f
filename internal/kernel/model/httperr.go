package model

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryAfter reads how long a provider asked the caller to wait:
// retry-after-ms (OpenAI), then retry-after in seconds or as an HTTP date.
// Zero when absent or unreadable.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Redact replaces every secret in s by "[REDACTED]". Providers pass every
// message they did not write themselves through it, because some APIs echo
// the key they were given in their error bodies. Secrets shorter than 8
// characters are ignored: replacing them would garble ordinary text and
// they are no real credential.
func Redact(s string, secrets ...string) string {
	for _, k := range secrets {
		if len(k) >= 8 {
			s = strings.ReplaceAll(s, k, "[REDACTED]")
		}
	}
	return s
}
