package notify

import (
	"fmt"
	"strings"
	"unicode"
)

// visible shows control characters (newlines and tabs included) and
// bidi/invisible format characters (U+202E, U+2066…, zero-width ones) as
// \uXXXX escapes, so that a person reads what a message holds, not what
// those characters make a mail client or chat draw: arguments that look
// reversed, or a reason whose second line pretends to be Keel's own.
// Inside the JSON strings of arguments the escapes are the same JSON: the
// args hash still describes what is shown.
func visible(s string) string {
	if strings.IndexFunc(s, hidden) < 0 {
		return s
	}
	var b strings.Builder
	for _, c := range s {
		if hidden(c) {
			fmt.Fprintf(&b, `\u%04x`, c)
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

func hidden(c rune) bool {
	return unicode.IsControl(c) || unicode.Is(unicode.Cf, c) || c == '\u2028' || c == '\u2029'
}

// inCode is s made safe inside a Slack code span or block: visible, with
// every backtick as \u0060, so nothing in s can close the block and have
// the rest read as Slack markup (a fake "*APPROVED*" line, a link). Inside
// a JSON string — the only place valid arguments hold a backtick — the
// escape is the same character.
func inCode(s string) string {
	return strings.ReplaceAll(visible(s), "`", `\u0060`)
}
