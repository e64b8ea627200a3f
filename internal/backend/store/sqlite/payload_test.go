package sqlite

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestPackRoundTrip: any bytes — made of Keel's phrases, their pieces,
// code bytes, tag bytes and noise, short and long — read back as packed.
func TestPackRoundTrip(t *testing.T) {
	c := newCodec()
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"", "{", "}", `"`, ",", "x", "\x00", "\x01", "\x02", "\x05", "\x1f", "\xff", "é"}
	for _, p := range phraseTable {
		pieces = append(pieces, p.phrase, p.phrase[:len(p.phrase)/2], p.phrase[1:])
	}
	for i := 0; i < 20000; i++ {
		var b []byte
		for n := rng.IntN(64); n > 0; n-- {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		if rng.IntN(50) == 0 {
			b = bytes.Repeat(b, 1+rng.IntN(40)) // past deflateMin
		}
		got, err := c.unpack(c.pack(b))
		if err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		if !bytes.Equal(got, b) && !(len(b) == 0 && got == nil) {
			t.Fatalf("packed %q, read back %q", b, got)
		}
	}
}

// TestTokensShrinkAStep: the payloads of a plain step shrink to well under
// half, and the table holds only codes that valid JSON never holds raw.
func TestTokensShrinkAStep(t *testing.T) {
	c := newCodec()
	for _, p := range phraseTable {
		if p.code == '\t' || p.code == '\n' || p.code == '\r' || p.code >= 0x20 || p.code == 0 {
			t.Fatalf("code %#x may appear in JSON", p.code)
		}
	}
	for _, tc := range []struct{ payload string }{
		{`{"answer":{"calls":[{"name":"lookup","args":{"q":"x"}}]},"duration_us":48,"model":"m","response_id":"r-1","stop_reason":"tool_use","tool_calls":1,"usage":{"input_tokens":7,"output_tokens":5}}`},
		{`{"messages":[{"role":"assistant","tool_calls":[{"id":"c1","name":"lookup","args":{"q":"x"}}]},{"role":"tool","tool_results":[{"call_id":"c1","content":"y"}]}]}`},
		{`{"duration_us":10,"result_chars":5,"tool":"lookup"}`},
	} {
		packed := c.pack([]byte(tc.payload))
		if packed[0] != tagTokens || 2*len(packed) > len(tc.payload) {
			t.Errorf("%s: packed to %d of %d bytes (tag %#x)", tc.payload, len(packed), len(tc.payload), packed[0])
		}
	}
}
