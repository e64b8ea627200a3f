package sqlite

import (
	"bytes"
	"fmt"
)

// Phrase tokens: the form of a small payload (payload.go, tag 0x02). Most
// of the bytes of the JSON a plain step writes are Keel's own field names
// and the punctuation around them, in the order Keel writes them; each of
// these phrases is stored as one byte. The bytes used are control
// characters JSON never holds raw (tab, newline and carriage return
// excepted), so a payload that holds none of them — any JSON — is
// tokenized without ambiguity, and reading back is one table look-up a
// byte. It costs a microsecond where deflate costs tens (each deflate
// stream clears its own hash tables first).
//
// Only Keel's vocabulary is here: the fields of model messages, of the
// events a step writes and of the recorded answer, never a workload's. The
// table is part of the stored format: a phrase is never changed or
// renumbered; new ones may take the codes still free (0x1e, 0x1f).
var phraseTable = [...]struct {
	code   byte
	phrase string
}{
	// Model messages (checkpoint state).
	{0x01, `{"messages":[`},
	{0x02, `{"role":"assistant","tool_calls":[{"id":"`},
	{0x03, `{"role":"assistant","text":"`},
	{0x04, `{"role":"tool","tool_results":[{"call_id":"`},
	{0x05, `{"role":"user","text":"`},
	{0x06, `","name":"`},
	{0x07, `","args":`},
	{0x08, `","content":"`},
	{0x0b, `}]},`},
	{0x0c, `"}]}]}`},
	{0x0e, `},{"id":"`},
	{0x0f, `"},{"call_id":"`},
	{0x10, `,"is_error":true`},
	// model_call_completed (and the recorded answer in it).
	{0x11, `{"answer":{"calls":[{"name":"`},
	{0x12, `{"answer":{"text":"`},
	{0x13, `}]},"duration_us":`},
	{0x14, `,"model":"`},
	{0x15, `","response_id":"`},
	{0x16, `","stop_reason":"tool_use","tool_calls":`},
	{0x17, `","stop_reason":"end_turn","tool_calls":`},
	{0x18, `,"usage":{"input_tokens":`},
	{0x19, `,"output_tokens":`},
	// tool_completed, and a plan item's result.
	{0x1a, `{"duration_us":`},
	{0x1b, `,"result_chars":`},
	{0x1c, `,"tool":"`},
	{0x1d, `{"content":"`},
}

// phrase is one entry of phraseTable.
type phrase struct {
	code byte
	text string
}

// tokens holds phraseTable indexed both ways.
type tokens struct {
	expand [256]string   // code → phrase; "" for a byte that is not a code
	starts [256][]phrase // first byte → the phrases starting with it, longest first
}

func newTokens() *tokens {
	t := &tokens{}
	for _, p := range phraseTable {
		t.expand[p.code] = p.phrase
		first := p.phrase[0]
		s := append(t.starts[first], phrase{p.code, p.phrase})
		// Longest first, so a greedy match takes the longer phrase.
		for i := len(s) - 1; i > 0 && len(s[i].text) > len(s[i-1].text); i-- {
			s[i], s[i-1] = s[i-1], s[i]
		}
		t.starts[first] = s
	}
	return t
}

// encode appends the tokenized b to dst; ok is false when b holds a code
// byte itself (it is not JSON), which the tokenized form could not tell
// from a phrase.
func (t *tokens) encode(dst, b []byte) (out []byte, ok bool) {
	for i := 0; i < len(b); {
		c := b[i]
		if t.expand[c] != "" {
			return dst, false
		}
		matched := false
		for _, p := range t.starts[c] {
			if len(b)-i >= len(p.text) && string(b[i:i+len(p.text)]) == p.text {
				dst = append(dst, p.code)
				i += len(p.text)
				matched = true
				break
			}
		}
		if !matched {
			dst = append(dst, c)
			i++
		}
	}
	return dst, true
}

// decode expands a tokenized body.
func (t *tokens) decode(v []byte) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(3 * len(v))
	for _, c := range v {
		if p := t.expand[c]; p != "" {
			out.WriteString(p)
		} else {
			out.WriteByte(c)
		}
		if out.Len() > maxUnpacked {
			return nil, fmt.Errorf("sqlite: payload expands past %d bytes", maxUnpacked)
		}
	}
	return out.Bytes(), nil
}
