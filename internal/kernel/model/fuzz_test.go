package model_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/kernel/model"
)

// FuzzAccumulator feeds the accumulator a tool call whose JSON arguments
// are split at arbitrary points, then corrupted by an arbitrary program of
// edits (fragments dropped, duplicated, truncated, chunks reordered, stray
// chunks, a missing stop). Whatever arrives, the accumulator must not panic
// and must never return a tool call whose arguments are not a complete JSON
// object. An uncorrupted stream must come back exactly.
//
//	go test ./internal/kernel/model -run '^$' -fuzz FuzzAccumulator -fuzztime 30s
func FuzzAccumulator(f *testing.F) {
	f.Add(`{"query":"durable agents","max_results":5}`, []byte{})
	f.Add(`{"query":"durable agents","max_results":5}`, []byte{3, 9, 17, 0x80 | 2})
	f.Add(`{"a":[1,2,{"b":"}"}]}`, []byte{1, 1, 1, 0x80, 0x80 | 5})
	f.Add(`{}`, []byte{0x80 | 1, 0x80 | 6})
	f.Add(`null`, []byte{})
	f.Fuzz(func(t *testing.T, args string, program []byte) {
		// Split points come from the bytes below 0x80, edits from the rest.
		var cuts []int
		var edits []byte
		for _, b := range program {
			if b < 0x80 {
				cuts = append(cuts, int(b))
			} else {
				edits = append(edits, b&0x7f)
			}
		}
		var frags []string
		rest := args
		for _, c := range cuts {
			if len(rest) == 0 {
				break
			}
			n := 1 + c%len(rest)
			frags = append(frags, rest[:n])
			rest = rest[n:]
		}
		if rest != "" {
			frags = append(frags, rest)
		}

		chunks := []model.Chunk{
			{Kind: model.ChunkStart, ResponseID: "r"},
			{Kind: model.ChunkToolCallStart, Index: 0, ID: "call_1", Name: "search"},
		}
		for _, fr := range frags {
			chunks = append(chunks, model.Chunk{Kind: model.ChunkToolArgsDelta, Index: 0, Text: fr})
		}
		chunks = append(chunks,
			model.Chunk{Kind: model.ChunkToolCallEnd, Index: 0},
			model.Chunk{Kind: model.ChunkStop, StopReason: model.StopToolUse})

		for i, e := range edits {
			if len(chunks) == 0 {
				break
			}
			at := i % len(chunks)
			switch e % 7 {
			case 0: // drop a chunk
				chunks = append(chunks[:at], chunks[at+1:]...)
			case 1: // duplicate a chunk
				chunks = append(chunks[:at+1], chunks[at:]...)
			case 2: // truncate the stream
				chunks = chunks[:at]
			case 3: // swap with the next chunk
				if at+1 < len(chunks) {
					chunks[at], chunks[at+1] = chunks[at+1], chunks[at]
				}
			case 4: // cut a fragment's text in half
				chunks[at].Text = chunks[at].Text[:len(chunks[at].Text)/2]
			case 5: // a fragment for another, unknown call
				chunks = append(chunks[:at], append([]model.Chunk{{Kind: model.ChunkToolArgsDelta, Index: 1, Text: "{"}}, chunks[at:]...)...)
			case 6: // a chunk of an unknown kind
				chunks[at].Kind = model.ChunkKind(int(e) + 7)
			}
		}

		var acc model.Accumulator
		var addErr error
		for _, c := range chunks {
			if addErr = acc.Add(c); addErr != nil {
				break
			}
		}
		resp, err := acc.Response()
		if err == nil && addErr == nil {
			for _, tc := range resp.ToolCalls {
				var obj map[string]any
				if json.Unmarshal(tc.Args, &obj) != nil || obj == nil {
					t.Fatalf("returned tool call with args %q that are not a JSON object", tc.Args)
				}
				if tc.ID == "" || tc.Name == "" {
					t.Fatalf("returned tool call without id or name: %+v", tc)
				}
			}
		}
		if err != nil && (resp.ToolCalls != nil || resp.Text != "") {
			t.Fatalf("error %v came with content %+v", err, resp)
		}

		// Without edits the stream is well-formed: a valid object must come
		// back byte for byte, anything else must be refused. No arguments
		// at all mean a call without arguments: {}.
		if len(edits) == 0 {
			// The accumulator trims as strings.TrimSpace does (a wider set
			// than JSON's whitespace), so compare after the same trim.
			args = strings.TrimSpace(args)
			if args == "" {
				args = "{}"
			}
			var obj map[string]any
			valid := json.Unmarshal([]byte(args), &obj) == nil && obj != nil
			switch {
			case valid && err != nil:
				t.Fatalf("well-formed stream refused: %v", err)
			case valid && !bytes.Equal(resp.ToolCalls[0].Args, []byte(args)):
				t.Fatalf("args = %q, want %q", resp.ToolCalls[0].Args, args)
			case !valid && err == nil:
				t.Fatalf("args %q are not a JSON object but were accepted", args)
			}
		}
	})
}
