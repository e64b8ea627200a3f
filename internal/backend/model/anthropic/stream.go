package anthropic

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/keelrun/keel/internal/backend/model/sse"
	"github.com/keelrun/keel/internal/kernel/model"
)

// event is every Messages API stream event, by the fields Keel reads.
type event struct {
	Type    string `json:"type"`
	Index   int64  `json:"index"`
	Message struct {
		ID    string `json:"id"`
		Model string `json:"model"`
		Usage usage  `json:"usage"`
	} `json:"message"`
	ContentBlock struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
		Text string `json:"text"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage usage `json:"usage"`
}

type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// Anthropic counts cache tokens apart from input_tokens already.
func (u usage) chunk() model.Chunk {
	return model.Chunk{Kind: model.ChunkUsage, Usage: model.Usage{
		InputTokens:      u.InputTokens,
		OutputTokens:     u.OutputTokens,
		CacheReadTokens:  u.CacheReadInputTokens,
		CacheWriteTokens: u.CacheCreationInputTokens,
	}}
}

// stream maps Messages API events to model chunks.
type stream struct {
	p         *Provider
	body      io.ReadCloser
	dec       *sse.Decoder
	requestID string
	tools     map[int64]bool // content block indexes that are tool_use blocks
	pending   []model.Chunk
	stop      string
}

func (s *stream) Next() (model.Chunk, error) {
	for len(s.pending) == 0 {
		name, data, err := s.dec.Next()
		if err != nil {
			return model.Chunk{}, err
		}
		if len(data) == 0 {
			continue
		}
		if err := s.event(name, data); err != nil {
			return model.Chunk{}, err
		}
	}
	c := s.pending[0]
	s.pending = s.pending[1:]
	return c, nil
}

func (s *stream) emit(c model.Chunk) { s.pending = append(s.pending, c) }

// malformed wraps an event that did not decode; the decoder's message
// names the offending bytes, so it is redacted too.
func (s *stream) malformed(err error) error {
	return fmt.Errorf("%w: anthropic event: %s", model.ErrMalformed, model.Redact(err.Error(), s.p.cfg.APIKey))
}

func (s *stream) event(name string, data []byte) error {
	if name == "error" {
		var e apiError
		if err := json.Unmarshal(data, &e); err != nil {
			return s.malformed(err)
		}
		return s.p.inStreamError(e, s.requestID)
	}
	var ev event
	if err := json.Unmarshal(data, &ev); err != nil {
		return s.malformed(err)
	}
	switch ev.Type {
	case "message_start":
		s.emit(model.Chunk{Kind: model.ChunkStart, ResponseID: model.Redact(ev.Message.ID, s.p.cfg.APIKey), Model: model.Redact(ev.Message.Model, s.p.cfg.APIKey)})
		s.emit(ev.Message.Usage.chunk())
	case "content_block_start":
		switch cb := ev.ContentBlock; cb.Type {
		case "tool_use":
			s.tools[ev.Index] = true
			s.emit(model.Chunk{Kind: model.ChunkToolCallStart, Index: int(ev.Index), ID: cb.ID, Name: cb.Name})
		case "text":
			if cb.Text != "" {
				s.emit(model.Chunk{Kind: model.ChunkText, Text: cb.Text})
			}
		}
		// Thinking and server-tool blocks are the provider's own business.
	case "content_block_delta":
		switch ev.Delta.Type {
		case "text_delta":
			s.emit(model.Chunk{Kind: model.ChunkText, Text: ev.Delta.Text})
		case "input_json_delta":
			if s.tools[ev.Index] {
				s.emit(model.Chunk{Kind: model.ChunkToolArgsDelta, Index: int(ev.Index), Text: ev.Delta.PartialJSON})
			}
		}
	case "content_block_stop":
		if s.tools[ev.Index] {
			s.emit(model.Chunk{Kind: model.ChunkToolCallEnd, Index: int(ev.Index)})
		}
	case "message_delta":
		s.stop = ev.Delta.StopReason
		s.emit(ev.Usage.chunk())
	case "message_stop":
		// The only event that completes a stream.
		s.emit(model.Chunk{Kind: model.ChunkStop, StopReason: s.stop})
	case "error":
		// An error event named only by its data's type.
		var e apiError
		if err := json.Unmarshal(data, &e); err != nil {
			return s.malformed(err)
		}
		return s.p.inStreamError(e, s.requestID)
	}
	return nil
}

func (s *stream) Close() error { return s.body.Close() }
