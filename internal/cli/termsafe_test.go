package cli

import "testing"

func TestTermSafe(t *testing.T) {
	tests := []struct {
		name, in, want, wantText string
	}{
		{"plain", "hello, wörld ✓", "hello, wörld ✓", "hello, wörld ✓"},
		{"empty", "", "", ""},
		{"title escape", "\x1b]0;pwned\x07done", `\x1b]0;pwned\x07done`, `\x1b]0;pwned\x07done`},
		{"csi colour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`, `\x1b[31mred\x1b[0m`},
		{"carriage return overwrites", "ok\rrm -rf", `ok\x0drm -rf`, `ok\x0drm -rf`},
		{"newline and tab", "a\nb\tc", `a\x0ab\x09c`, "a\nb\tc"},
		{"del and nul", "a\x7fb\x00", `a\x7fb\x00`, `a\x7fb\x00`},
		{"C1 CSI", "a\u009b31mb", `a\u009b31mb`, `a\u009b31mb`},
		{"right-to-left override", "pay \u202eusd 001", `pay \u202eusd 001`, `pay \u202eusd 001`},
		{"bidi isolates", "\u2066x\u2069", `\u2066x\u2069`, `\u2066x\u2069`},
		{"zero width", "a\u200bb\u200dc\u200fd\ufeff", `a\u200bb\u200dc\u200fd\ufeff`, `a\u200bb\u200dc\u200fd\ufeff`},
		{"line separator", "a\u2028b", `a\u2028b`, `a\u2028b`},
		{"invalid utf-8", "a\xffb\x9b", `a\xffb\x9b`, `a\xffb\x9b`},
		{"replacement char itself kept", "a\ufffdb", "a\ufffdb", "a\ufffdb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := termSafe(tt.in); got != tt.want {
				t.Errorf("termSafe(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if got := termSafeText(tt.in); got != tt.wantText {
				t.Errorf("termSafeText(%q) = %q, want %q", tt.in, got, tt.wantText)
			}
		})
	}
}
