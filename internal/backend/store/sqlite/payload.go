package sqlite

// Payload compression (migration 0006). Event data, checkpoint state and
// plan item args and results are mostly small JSON documents written by
// Keel, most of whose bytes are Keel's own field names. A stored payload is
// one of:
//
//	0x02 TOKENS    a payload under deflateMin bytes with Keel's phrases as
//	               one byte each (tokens.go)
//	0x01 DEFLATE   the raw deflate stream of a larger payload, with
//	               payloadDict as its preset dictionary
//	0x00 BYTES     the payload itself, after a leading 0x00 (written for a
//	               payload that itself starts with 0x00, 0x01 or 0x02)
//	BYTES          anything else: the payload as it is (every row written
//	               before 0006, and a payload neither form would shrink)
//
// JSON never starts with any of the tag bytes, so rows written before 0006
// and plain JSON written by hand read back as they are; 0006 escapes the
// non-JSON checkpoint states and plan results that did start with one.

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"sync"
)

const (
	tagRaw     = 0x00
	tagDeflate = 0x01
	tagTokens  = 0x02
)

// minPack is the shortest payload worth packing: the shortest phrase with
// what it closes (`{"content":"` and `"}`) is 14 bytes, and a payload that
// does not shrink is stored raw anyway. deflateMin is where deflate takes
// over from tokens: each deflate stream first clears its hash tables
// (640 KB), tens of microseconds that only a larger payload repays.
const (
	minPack    = 8
	deflateMin = 512
)

// maxUnpacked bounds what one stored payload may inflate to: the largest
// payload package store accepts (a checkpoint's inline state) with room to
// spare. A row that inflates past it is corrupt, not a record.
const maxUnpacked = 1 << 20

// payloadDict is the preset dictionary: only Keel's own vocabulary — the
// field names and enum values of the records and events it writes and of
// the model messages a checkpoint holds — never a workload's. Deflate
// finds matches nearest the end first, so the most frequent come last. It
// is part of the stored format: a change is a new tag, never an edit.
const payloadDict = `"reason":"error":"attempt":"attempts":"kind":"endpoint":"retry_after":"status":` +
	`"pending","running","failed","denied","skipped","needs_human","awaiting_approval",` +
	`"mode":"safe_readonly","confirm_once","mutating","approval_id":"decided_by":"args_hash":"jcs:` +
	`"operation_id":"op_","idempotency_key":"destination":"external_id":"artifact_hash":"sha256:` +
	`"owner":"token":"expires":"policy":"input_id":"checkpoint_id":"cp_","bytes":"seq":"step":` +
	`"omitted_messages":"retried_attempts":"cost_micro_usd":"cache_read_tokens":"cache_write_tokens":` +
	`"stop_reason":"end_turn","max_tokens","request_chars":"concurrent":true,"result_chars":"tool":` +
	`"plan_item_id":"item_","result":"content":"is_error":true,"omitted_bytes":"text":"` +
	`{"messages":[{"role":"user","text":"` +
	`"},{"role":"assistant","text":"` +
	`"usage":{"input_tokens":` +
	`,"output_tokens":` +
	`{"answer":{"text":"` +
	`{"answer":{"calls":[{"name":"` +
	`","args":{"` +
	`"}}]},"duration_us":` +
	`,"model":"` +
	`","response_id":"` +
	`","stop_reason":"tool_use","tool_calls":1,"usage":{"input_tokens":` +
	`{"duration_us":` +
	`,"result_chars":` +
	`,"tool":"` +
	`{"role":"assistant","tool_calls":[{"id":"` +
	`","name":"` +
	`","args":{"` +
	`{"role":"tool","tool_results":[{"call_id":"` +
	`","content":"`

// codec packs and unpacks payloads, reusing its deflate writers and
// readers: a new writer allocates its whole window (hundreds of KB).
type codec struct {
	dict    []byte
	tok     *tokens
	writers sync.Pool // *flate.Writer
	readers sync.Pool // io.ReadCloser that is a flate.Resetter
}

func newCodec() *codec {
	c := &codec{dict: []byte(payloadDict), tok: newTokens()}
	c.writers.New = func() any {
		// Level 2 is the fastest that uses the dictionary (BestSpeed ignores
		// one); for payloads this small higher levels find no more.
		w, err := flate.NewWriterDict(io.Discard, 2, c.dict)
		if err != nil {
			panic(err) // only for an invalid level, which 2 is not
		}
		return w
	}
	return c
}

// pack is what a payload column stores for b: nil for none, else the
// smallest of its packed and raw forms.
func (c *codec) pack(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	switch {
	case len(b) >= deflateMin:
		var buf bytes.Buffer
		buf.Grow(len(b)/2 + 8)
		buf.WriteByte(tagDeflate)
		w := c.writers.Get().(*flate.Writer)
		w.Reset(&buf)
		_, werr := w.Write(b)
		cerr := w.Close()
		c.writers.Put(w) // it holds buf until its next Reset: harmless
		if werr == nil && cerr == nil && buf.Len() < len(b) {
			return buf.Bytes()
		}
	case len(b) >= minPack:
		out, ok := c.tok.encode(append(make([]byte, 0, len(b)), tagTokens), b)
		if ok && len(out) < len(b) {
			return out
		}
	}
	if b[0] == tagRaw || b[0] == tagDeflate || b[0] == tagTokens {
		return append([]byte{tagRaw}, b...)
	}
	return b
}

// unpack reads a payload column back.
func (c *codec) unpack(v []byte) ([]byte, error) {
	if len(v) == 0 {
		return nil, nil
	}
	switch v[0] {
	case tagRaw:
		return v[1:], nil
	case tagTokens:
		return c.tok.decode(v[1:])
	case tagDeflate:
	default:
		return v, nil
	}
	r, _ := c.readers.Get().(io.ReadCloser)
	if r == nil {
		r = flate.NewReaderDict(bytes.NewReader(v[1:]), c.dict)
	} else if err := r.(flate.Resetter).Reset(bytes.NewReader(v[1:]), c.dict); err != nil {
		return nil, fmt.Errorf("sqlite: payload: %w", err)
	}
	defer c.readers.Put(r)
	out, err := io.ReadAll(io.LimitReader(r, maxUnpacked+1))
	if err != nil {
		return nil, fmt.Errorf("sqlite: payload: %w", err)
	}
	if len(out) > maxUnpacked {
		return nil, fmt.Errorf("sqlite: payload inflates past %d bytes", maxUnpacked)
	}
	return out, nil
}
