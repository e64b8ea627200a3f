package cli

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// termSafe returns s fit to print on a terminal: every character a
// terminal would act on instead of showing (C0 and C1 controls, ESC and
// DEL among them) and every bidi control or invisible format character
// (U+202E and the like, which reorder or hide what a person reads while
// the approval's hash binds the bytes) is written as a visible escape,
// \x1b or \u202e; a byte that is not UTF-8 as \xNN. Run input, output,
// errors, tool names, arguments and event data are untrusted: they come
// from a model, a tool or a caller, and all human output of them goes
// through here (--json output is JSON, escaped by encoding/json).
// A backslash is left as it is, so an escape is not told from the same
// text written literally; what matters is that nothing is hidden or acts.
func termSafe(s string) string { return escapeUnsafe(s, false) }

// termSafeText is termSafe for text whose layout is kept, a run's output
// or indented JSON: newline and tab stay as they are.
func termSafeText(s string) string { return escapeUnsafe(s, true) }

func escapeUnsafe(s string, keepLayout bool) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r == utf8.RuneError || unsafeRune(r, keepLayout) }) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r, keepLayout) && r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r, keepLayout):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// unsafeRune reports whether r must not reach a terminal as it is.
func unsafeRune(r rune, keepLayout bool) bool {
	switch {
	case keepLayout && (r == '\n' || r == '\t'):
		return false
	case r < 0x20, r >= 0x7f && r <= 0x9f: // C0, DEL, C1 (0x9b is CSI)
		return true
	case r >= 0x200b && r <= 0x200f, // zero-width space/joiners, LRM, RLM
		r >= 0x2028 && r <= 0x2029, // line and paragraph separators
		r >= 0x202a && r <= 0x202e, // bidi embeddings and overrides
		r >= 0x2060 && r <= 0x2064, // word joiner, invisible operators
		r >= 0x2066 && r <= 0x2069, // bidi isolates
		r == 0x061c,                // Arabic letter mark (bidi)
		r == 0xfeff:                // zero-width no-break space (BOM)
		return true
	}
	return false
}
