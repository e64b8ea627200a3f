package run

import (
	"bytes"
	"testing"
)

// TestWriteStringAsRuneByRune: the fast path over plain ASCII writes what
// escaping rune by rune writes, for controls, quotes, non-ASCII and invalid
// UTF-8 alike (event hashes depend on every byte).
func TestWriteStringAsRuneByRune(t *testing.T) {
	cases := map[string]string{
		"empty":     "",
		"plain":     `hello world ~ 0x7f:` + "\x7f",
		"json":      `{"a":"b\"c","d":[1,2]}`,
		"controls":  "a\b\f\n\r\t\x00\x1fz",
		"backslash": `C:\path\`,
		"non-ascii": "café — 日本 🙂",
		"invalid":   "ok\xffbad\xc3(\xe2\x82",
		"mixed":     "\"\xff\\\n",
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			var got, want bytes.Buffer
			writeString(&got, s)
			want.WriteByte('"')
			for _, r := range s {
				writeRune(&want, r)
			}
			want.WriteByte('"')
			if got.String() != want.String() {
				t.Fatalf("writeString(%q) = %q, want %q", s, got.String(), want.String())
			}
		})
	}
}
