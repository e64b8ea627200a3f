// Package scripted is a deterministic model driven by a JSON script of
// turns, for tests, the demo and benchmarks. It streams like a real
// provider (chunks, tool arguments in fragments) and can inject the faults a
// real transport meets: a stream cut inside a tool call's arguments, a 429
// with retry-after, a 500, a stall.
//
// Which turn it plays is decided by the transcript (the number of assistant
// messages already in it, counting those the context window left out of
// the request), so a run replayed after a crash gets the same answers. String arguments of the form "{{tool.field}}" are filled from the
// JSON result of the latest call to that tool, so a script can publish the
// hash a previous tool returned.
package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/keelrun/keel/internal/kernel/model"
)

// Script is the JSON document that drives the model.
type Script struct {
	Turns []Turn `json:"turns"`
	// Final is answered once the turns run out.
	Final string `json:"final,omitempty"`
}

// Turn is one assistant answer.
type Turn struct {
	Text      string       `json:"text,omitempty"`
	ToolCalls []ToolCall   `json:"tool_calls,omitempty"`
	Usage     *model.Usage `json:"usage,omitempty"`
	// Repeat plays this turn this many times (default 1).
	Repeat int     `json:"repeat,omitempty"`
	Faults []Fault `json:"faults,omitempty"`
}

// ToolCall is a scripted tool call.
type ToolCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// Fault is injected into the first Attempts attempts of a turn (per run, in
// this process).
type Fault struct {
	// Kind: "cut" (stream ends inside the first tool call's arguments),
	// "status_429", "status_500", "stall" (no chunk until the call's
	// context ends), "malformed" (a tool call whose arguments never close).
	Kind              string `json:"kind"`
	Attempts          int    `json:"attempts"`
	RetryAfterSeconds int    `json:"retry_after_seconds,omitempty"`
}

// Model plays a Script. It implements model.Streamer; wrap it with the
// transport (or model.Collect) to get a model.Model.
type Model struct {
	turns []Turn
	ends  []int // ends[i]: the turn index after turns[i]'s repeats
	final string

	mu       sync.Mutex
	attempts map[string]int // run id + turn index → attempts seen, for turns with faults only
}

// New builds a model from a parsed script.
func New(s Script) (*Model, error) {
	var turns []Turn
	var ends []int
	for i, t := range s.Turns {
		n := t.Repeat
		if n == 0 {
			n = 1
		}
		if n < 0 {
			return nil, fmt.Errorf("turn %d: repeat %d is negative", i, n)
		}
		for _, tc := range t.ToolCalls {
			if tc.Name == "" {
				return nil, fmt.Errorf("turn %d: tool call without name", i)
			}
		}
		// One entry per scripted turn, not per repeat: a turn repeated
		// 100,000 times is one Turn.
		if n > 0 {
			turns = append(turns, t)
			ends = append(ends, last(ends)+n)
		}
	}
	final := s.Final
	if final == "" {
		final = "Done."
	}
	return &Model{turns: turns, ends: ends, final: final, attempts: map[string]int{}}, nil
}

func last(s []int) int {
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1]
}

// turn is the scripted turn at index idx, false once the script has run
// out.
func (m *Model) turn(idx int) (Turn, bool) {
	i := sort.SearchInts(m.ends, idx+1)
	if i == len(m.ends) {
		return Turn{}, false
	}
	return m.turns[i], true
}

// Load reads a script file.
func Load(path string) (*Model, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scripted model: %w", err)
	}
	return Parse(b)
}

// Parse reads a script document.
func Parse(b []byte) (*Model, error) {
	var s Script
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("scripted model: script: %w", err)
	}
	return New(s)
}

// Stream plays the turn the transcript is at.
func (m *Model) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	idx := req.OmittedAssistant
	for _, msg := range req.Messages {
		if msg.Role == model.RoleAssistant {
			idx++
		}
	}
	turn, ok := m.turn(idx)
	if !ok {
		turn = Turn{Text: m.final}
	}
	key := fmt.Sprintf("%s#%d", req.RunID, idx)
	attempt := 0
	if len(turn.Faults) > 0 {
		// Only a turn with faults needs its attempts counted: a long run
		// of plain turns leaves nothing behind here.
		m.mu.Lock()
		attempt = m.attempts[key]
		m.attempts[key] = attempt + 1
		m.mu.Unlock()
	}

	var fault *Fault
	for i := range turn.Faults {
		if attempt < turn.Faults[i].Attempts {
			fault = &turn.Faults[i]
			break
		}
	}
	if fault != nil {
		switch fault.Kind {
		case "status_429":
			return nil, &model.StatusError{Provider: "scripted", Status: 429, RequestID: key,
				RetryAfter: time.Duration(fault.RetryAfterSeconds) * time.Second, Message: "rate limited (scripted)"}
		case "status_500":
			return nil, &model.StatusError{Provider: "scripted", Status: 500, RequestID: key, Message: "server error (scripted)"}
		}
	}

	chunks, err := m.chunks(idx, turn, req)
	if err != nil {
		return nil, err
	}
	s := &stream{ctx: ctx, chunks: chunks}
	if fault != nil {
		switch fault.Kind {
		case "cut":
			s.chunks, s.cutErr = cutInsideArgs(chunks), io.ErrUnexpectedEOF
		case "stall":
			s.stallAfter = 1
		case "malformed":
			s.chunks = dropArgsEnd(chunks)
		}
	}
	return s, nil
}

func (m *Model) chunks(idx int, turn Turn, req model.Request) ([]model.Chunk, error) {
	out := []model.Chunk{{Kind: model.ChunkStart, ResponseID: fmt.Sprintf("scripted-%d", idx), Model: "scripted"}}
	for _, piece := range split(turn.Text, 16) {
		out = append(out, model.Chunk{Kind: model.ChunkText, Text: piece})
	}
	outChars := len(turn.Text)
	for i, tc := range turn.ToolCalls {
		args, err := fill(tc.Args, req.Messages)
		if err != nil {
			return nil, fmt.Errorf("scripted model: turn %d tool %s: %w", idx, tc.Name, err)
		}
		outChars += len(args)
		out = append(out, model.Chunk{Kind: model.ChunkToolCallStart, Index: i, ID: fmt.Sprintf("call_%d_%d", idx, i), Name: tc.Name})
		for _, piece := range split(string(args), 7) {
			out = append(out, model.Chunk{Kind: model.ChunkToolArgsDelta, Index: i, Text: piece})
		}
		out = append(out, model.Chunk{Kind: model.ChunkToolCallEnd, Index: i})
	}
	// The estimate reads the whole transcript: a turn that states its
	// usage (as the benchmarks' instant model does) costs nothing per
	// message.
	var usage model.Usage
	if turn.Usage != nil {
		usage = *turn.Usage
	} else {
		usage = model.Usage{InputTokens: int64(inputChars(req)/4 + 1), OutputTokens: int64(outChars/4 + 1)}
	}
	stop := "end_turn"
	if len(turn.ToolCalls) > 0 {
		stop = "tool_use"
	}
	out = append(out, model.Chunk{Kind: model.ChunkUsage, Usage: usage}, model.Chunk{Kind: model.ChunkStop, StopReason: stop})
	return out, nil
}

func inputChars(req model.Request) int {
	n := len(req.System)
	for _, m := range req.Messages {
		n += len(m.Text)
		for _, tc := range m.ToolCalls {
			n += len(tc.Args)
		}
		for _, tr := range m.ToolResults {
			n += len(tr.Content)
		}
	}
	return n
}

func split(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func cutInsideArgs(chunks []model.Chunk) []model.Chunk {
	for i, c := range chunks {
		if c.Kind == model.ChunkToolArgsDelta {
			return chunks[:i+1]
		}
	}
	return chunks[:len(chunks)/2]
}

func dropArgsEnd(chunks []model.Chunk) []model.Chunk {
	var out []model.Chunk
	dropped := false
	for _, c := range chunks {
		if c.Kind == model.ChunkToolArgsDelta && !dropped {
			// Keep only the first fragment: the arguments never close.
			out = append(out, c)
			dropped = true
			continue
		}
		if c.Kind == model.ChunkToolArgsDelta && dropped {
			continue
		}
		out = append(out, c)
	}
	return out
}

// fill replaces "{{tool.field}}" strings in args with the field of the latest
// JSON result of that tool in the transcript.
func fill(args json.RawMessage, msgs []model.Message) (json.RawMessage, error) {
	if len(args) == 0 {
		return json.RawMessage("{}"), nil
	}
	if !strings.Contains(string(args), "{{") {
		return args, nil
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return nil, err
	}
	v, err := fillValue(v, msgs)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func fillValue(v any, msgs []model.Message) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			f, err := fillValue(e, msgs)
			if err != nil {
				return nil, err
			}
			t[k] = f
		}
	case []any:
		for i, e := range t {
			f, err := fillValue(e, msgs)
			if err != nil {
				return nil, err
			}
			t[i] = f
		}
	case string:
		if strings.HasPrefix(t, "{{") && strings.HasSuffix(t, "}}") {
			ref := strings.TrimSuffix(strings.TrimPrefix(t, "{{"), "}}")
			tool, field, ok := strings.Cut(ref, ".")
			if !ok {
				return nil, fmt.Errorf("reference %q is not tool.field", t)
			}
			return lookup(tool, field, msgs)
		}
	}
	return v, nil
}

func lookup(tool, field string, msgs []model.Message) (any, error) {
	names := map[string]string{}
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			names[tc.ID] = tc.Name
		}
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, tr := range msgs[i].ToolResults {
			if names[tr.CallID] != tool || tr.IsError {
				continue
			}
			var obj map[string]any
			if err := json.Unmarshal([]byte(tr.Content), &obj); err != nil {
				return nil, fmt.Errorf("result of %s is not a JSON object", tool)
			}
			val, ok := obj[field]
			if !ok {
				return nil, fmt.Errorf("result of %s has no field %q", tool, field)
			}
			return val, nil
		}
	}
	return nil, fmt.Errorf("no result of %s in the transcript yet", tool)
}

type stream struct {
	ctx        context.Context
	chunks     []model.Chunk
	pos        int
	cutErr     error
	stallAfter int
}

func (s *stream) Next() (model.Chunk, error) {
	if err := s.ctx.Err(); err != nil {
		return model.Chunk{}, err
	}
	if s.stallAfter > 0 && s.pos >= s.stallAfter {
		<-s.ctx.Done()
		return model.Chunk{}, s.ctx.Err()
	}
	if s.pos >= len(s.chunks) {
		if s.cutErr != nil {
			return model.Chunk{}, s.cutErr
		}
		return model.Chunk{}, io.EOF
	}
	c := s.chunks[s.pos]
	s.pos++
	return c, nil
}

func (s *stream) Close() error { return nil }
