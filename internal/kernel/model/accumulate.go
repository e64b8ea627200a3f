package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Accumulator builds a Response from chunks. It refuses to produce a
// response from a stream that did not reach ChunkStop, and refuses tool calls
// whose arguments are not complete, valid JSON.
type Accumulator struct {
	resp    Response
	text    strings.Builder
	calls   map[int]*pendingCall
	stopped bool
}

type pendingCall struct {
	id, name string
	args     strings.Builder
	ended    bool
}

// Add takes one chunk. It returns an error for a chunk that cannot belong to
// a well-formed stream (a delta for an unknown tool call, anything after stop).
func (a *Accumulator) Add(c Chunk) error {
	if a.stopped {
		return fmt.Errorf("%w: chunk after stop", ErrIncomplete)
	}
	if a.calls == nil {
		a.calls = map[int]*pendingCall{}
	}
	switch c.Kind {
	case ChunkStart:
		if c.ResponseID != "" {
			a.resp.ResponseID = c.ResponseID
		}
		if c.Model != "" {
			a.resp.Model = c.Model
		}
	case ChunkText:
		a.text.WriteString(c.Text)
	case ChunkToolCallStart:
		if _, ok := a.calls[c.Index]; ok {
			return fmt.Errorf("%w: tool call %d started twice", ErrIncomplete, c.Index)
		}
		a.calls[c.Index] = &pendingCall{id: c.ID, name: c.Name}
	case ChunkToolArgsDelta:
		pc, ok := a.calls[c.Index]
		if !ok || pc.ended {
			return fmt.Errorf("%w: args for unknown or ended tool call %d", ErrIncomplete, c.Index)
		}
		pc.args.WriteString(c.Text)
	case ChunkToolCallEnd:
		pc, ok := a.calls[c.Index]
		if !ok {
			return fmt.Errorf("%w: end of unknown tool call %d", ErrIncomplete, c.Index)
		}
		pc.ended = true
	case ChunkUsage:
		mergeUsage(&a.resp.Usage, c.Usage)
	case ChunkStop:
		a.resp.StopReason = c.StopReason
		a.stopped = true
	default:
		return fmt.Errorf("%w: unknown chunk kind %d", ErrIncomplete, c.Kind)
	}
	return nil
}

func mergeUsage(dst *Usage, u Usage) {
	if u.InputTokens != 0 {
		dst.InputTokens = u.InputTokens
	}
	if u.OutputTokens != 0 {
		dst.OutputTokens = u.OutputTokens
	}
	if u.CacheReadTokens != 0 {
		dst.CacheReadTokens = u.CacheReadTokens
	}
	if u.CacheWriteTokens != 0 {
		dst.CacheWriteTokens = u.CacheWriteTokens
	}
}

// Response returns the complete response, or an error wrapping ErrIncomplete
// if the stream never stopped or a tool call's arguments are not a complete
// JSON object. Nothing partial is ever returned.
func (a *Accumulator) Response() (Response, error) {
	if !a.stopped {
		return Response{}, fmt.Errorf("%w: stream ended before its final event", ErrIncomplete)
	}
	r := a.resp
	r.Text = a.text.String()
	idx := make([]int, 0, len(a.calls))
	for i := range a.calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		pc := a.calls[i]
		args := strings.TrimSpace(pc.args.String())
		if args == "" {
			args = "{}"
		}
		// A JSON object is self-delimiting: if the arguments parse as one,
		// no fragment is missing. "null" unmarshals into a map without
		// error, hence the explicit check for an object.
		var obj map[string]any
		if err := json.Unmarshal([]byte(args), &obj); err != nil {
			return Response{}, fmt.Errorf("%w: tool call %q arguments: %v", ErrIncomplete, pc.name, err)
		}
		if obj == nil {
			return Response{}, fmt.Errorf("%w: tool call %q arguments are not a JSON object", ErrIncomplete, pc.name)
		}
		if pc.id == "" || pc.name == "" {
			return Response{}, fmt.Errorf("%w: tool call %d without id or name", ErrIncomplete, i)
		}
		r.ToolCalls = append(r.ToolCalls, ToolCall{ID: pc.id, Name: pc.name, Args: json.RawMessage(args)})
	}
	return r, nil
}

// Collect reads a stream to its end and accumulates it.
func Collect(s Stream) (Response, error) {
	var a Accumulator
	for {
		c, err := s.Next()
		if errors.Is(err, io.EOF) {
			return a.Response()
		}
		if err != nil {
			return Response{}, err
		}
		if err := a.Add(c); err != nil {
			return Response{}, err
		}
	}
}
