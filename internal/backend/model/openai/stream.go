package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/keelrun/keel/internal/backend/model/sse"
	"github.com/keelrun/keel/internal/kernel/model"
)

// chunk is a chat.completion.chunk, by the fields Keel reads; Error is
// set (even to null) only on an error object inside the stream.
type chunk struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Error   json.RawMessage `json:"error"`
	Choices []struct {
		Index int64 `json:"index"`
		Delta struct {
			Content   string `json:"content"`
			Refusal   string `json:"refusal"`
			ToolCalls []struct {
				Index    int64  `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// stream maps chat completion chunks to model chunks. Chat Completions
// has no final event but [DONE], which a cut may also precede, so a
// stream is complete when it ends cleanly (at [DONE] or at the end of the
// body) after both a finish_reason and the usage chunk, which
// include_usage makes the last data chunk.
type stream struct {
	p       *Provider
	body    io.ReadCloser
	dec     *sse.Decoder
	started bool
	open    map[int64]bool // tool calls started and not yet ended
	order   []int64
	stop    string
	usage   bool
	done    bool
	pending []model.Chunk
}

func (s *stream) Next() (model.Chunk, error) {
	for len(s.pending) == 0 {
		if s.done {
			return model.Chunk{}, io.EOF
		}
		_, data, err := s.dec.Next()
		switch {
		case err == io.EOF || err == nil && bytes.HasPrefix(data, []byte("[DONE]")):
			s.done = true
			if s.stop != "" && s.usage {
				return model.Chunk{Kind: model.ChunkStop, StopReason: s.stop}, nil
			}
			return model.Chunk{}, io.EOF
		case err != nil:
			return model.Chunk{}, err
		case len(data) == 0:
			continue
		}
		var c chunk
		if err := json.Unmarshal(data, &c); err != nil {
			return model.Chunk{}, fmt.Errorf("%w: openai chunk: %s", model.ErrMalformed, model.Redact(err.Error(), s.p.cfg.APIKey))
		}
		if c.Error != nil {
			return model.Chunk{}, s.p.inStreamError(data)
		}
		s.chunk(&c)
	}
	c := s.pending[0]
	s.pending = s.pending[1:]
	return c, nil
}

func (s *stream) emit(c model.Chunk) { s.pending = append(s.pending, c) }

func (s *stream) chunk(c *chunk) {
	if !s.started {
		s.started = true
		s.emit(model.Chunk{Kind: model.ChunkStart, ResponseID: model.Redact(c.ID, s.p.cfg.APIKey), Model: model.Redact(c.Model, s.p.cfg.APIKey)})
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // one choice is all we ask for
		}
		if ch.Delta.Content != "" {
			s.emit(model.Chunk{Kind: model.ChunkText, Text: ch.Delta.Content})
		}
		if ch.Delta.Refusal != "" {
			s.emit(model.Chunk{Kind: model.ChunkText, Text: ch.Delta.Refusal})
		}
		for _, tc := range ch.Delta.ToolCalls {
			if tc.ID != "" && !s.open[tc.Index] {
				s.open[tc.Index] = true
				s.order = append(s.order, tc.Index)
				s.emit(model.Chunk{Kind: model.ChunkToolCallStart, Index: int(tc.Index), ID: tc.ID, Name: tc.Function.Name})
			}
			if tc.Function.Arguments != "" {
				s.emit(model.Chunk{Kind: model.ChunkToolArgsDelta, Index: int(tc.Index), Text: tc.Function.Arguments})
			}
		}
		if ch.FinishReason != "" {
			s.stop = stopReason(ch.FinishReason)
			for _, i := range s.order {
				if s.open[i] {
					s.open[i] = false
					s.emit(model.Chunk{Kind: model.ChunkToolCallEnd, Index: int(i)})
				}
			}
		}
	}
	if u := c.Usage; u != nil {
		s.usage = true
		cached := u.PromptTokensDetails.CachedTokens
		s.emit(model.Chunk{Kind: model.ChunkUsage, Usage: model.Usage{
			// prompt_tokens includes the cached tokens; Usage keeps them apart.
			InputTokens:     u.PromptTokens - cached,
			OutputTokens:    u.CompletionTokens,
			CacheReadTokens: cached,
		}})
	}
}

func (s *stream) Close() error { return s.body.Close() }
