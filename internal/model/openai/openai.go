package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/keelrun/keel/internal/model"
)

// Name is the provider's name in errors and KEEL_MODEL.
const Name = "openai"

// Config configures a Provider.
type Config struct {
	// Model is the model name, e.g. "gpt-4.1".
	Model string
	// APIKey is the OpenAI API key. It is sent in a header and never
	// appears in an error.
	APIKey string
	// BaseURL overrides https://api.openai.com/v1/ (a compatible server, a
	// test server).
	BaseURL string
	// HTTPClient is the client the SDK uses; nil: the SDK's default.
	HTTPClient *http.Client
	// MaxTokens is sent as max_completion_tokens when the request sets
	// none; default model.DefaultMaxTokens.
	MaxTokens int
}

// Provider streams calls through the Chat Completions API.
type Provider struct {
	client sdk.Client
	cfg    Config
}

var _ model.Streamer = (*Provider)(nil)

// New builds a Provider. The SDK's own retries are off: the transport
// retries whole calls. The explicit key and base URL override the SDK's
// OPENAI_API_KEY and OPENAI_BASE_URL defaults.
func New(cfg Config) (*Provider, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai: no model")
	}
	if cfg.APIKey == "" {
		return nil, errors.New("openai: no API key")
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = model.DefaultMaxTokens
	}
	opts := []option.RequestOption{
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	} else {
		opts = append(opts, option.WithBaseURL("https://api.openai.com/v1/"))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Provider{client: sdk.NewClient(opts...), cfg: cfg}, nil
}

// Stream starts one streamed Chat Completions call, with usage in the last
// chunk (stream_options.include_usage). An HTTP failure is a
// *model.StatusError.
func (p *Provider) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	s := p.client.Chat.Completions.NewStreaming(ctx, params)
	if err := s.Err(); err != nil {
		_ = s.Close()
		return nil, p.convert(err)
	}
	return &stream{p: p, s: s, open: map[int64]bool{}}, nil
}

func (p *Provider) params(req model.Request) (sdk.ChatCompletionNewParams, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = p.cfg.MaxTokens
	}
	params := sdk.ChatCompletionNewParams{
		Model:               shared.ChatModel(p.cfg.Model),
		MaxCompletionTokens: param.NewOpt(int64(maxTokens)),
		StreamOptions:       sdk.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	}
	if req.System != "" {
		params.Messages = append(params.Messages, sdk.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case model.RoleUser:
			if m.Text != "" {
				params.Messages = append(params.Messages, sdk.UserMessage(m.Text))
			}
		case model.RoleAssistant:
			a := sdk.ChatCompletionAssistantMessageParam{}
			if m.Text != "" {
				a.Content.OfString = param.NewOpt(m.Text)
			}
			for _, c := range m.ToolCalls {
				args := string(c.Args)
				if args == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: args},
					},
				})
			}
			params.Messages = append(params.Messages, sdk.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case model.RoleTool:
			for _, r := range m.ToolResults {
				content := r.Content
				if r.IsError {
					// Chat Completions has no error flag on a tool message.
					content = "error: " + content
				}
				params.Messages = append(params.Messages, sdk.ToolMessage(content, r.CallID))
			}
		default:
			return params, fmt.Errorf("openai: unknown role %q", m.Role)
		}
	}
	for _, t := range req.Tools {
		fd := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fd.Description = param.NewOpt(t.Description)
		}
		if len(t.Schema) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.Schema, &schema); err != nil {
				return params, fmt.Errorf("openai: tool %q schema: %w", t.Name, err)
			}
			fd.Parameters = schema
		}
		params.Tools = append(params.Tools, sdk.ChatCompletionFunctionTool(fd))
	}
	return params, nil
}

// convert turns an SDK error into a *model.StatusError, an ErrMalformed, or
// passes it on (connection and context errors).
func (p *Provider) convert(err error) error {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		se := &model.StatusError{
			Provider: Name,
			Status:   apiErr.StatusCode,
			Message:  model.Redact(apiErr.Message, p.cfg.APIKey),
		}
		if apiErr.Response != nil {
			// The server chooses the request id: it may echo the key.
			se.RequestID = model.Redact(apiErr.Response.Header.Get("x-request-id"), p.cfg.APIKey)
			se.RetryAfter = model.RetryAfter(apiErr.Response.Header, time.Now())
		}
		if se.Message == "" {
			se.Message = http.StatusText(se.Status)
		}
		return se
	}
	var streamErr *ssestream.StreamError
	if errors.As(err, &streamErr) {
		// An error object inside a 200 stream.
		var body struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
				Code    any    `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(streamErr.Event.Data, &body)
		status := http.StatusInternalServerError
		if strings.Contains(body.Error.Type, "rate_limit") || fmt.Sprint(body.Error.Code) == "rate_limit_exceeded" {
			status = http.StatusTooManyRequests
		}
		msg := body.Error.Message
		if msg == "" {
			msg = "error event in stream"
		}
		return &model.StatusError{Provider: Name, Status: status, Message: model.Redact(msg, p.cfg.APIKey)}
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) {
		return fmt.Errorf("%w: openai chunk: %s", model.ErrMalformed, model.Redact(err.Error(), p.cfg.APIKey))
	}
	return err
}

// stopReason maps a finish_reason to the model vocabulary.
func stopReason(r string) string {
	switch r {
	case "stop":
		return model.StopEndTurn
	case "tool_calls", "function_call":
		return model.StopToolUse
	case "length":
		return model.StopMaxTokens
	case "content_filter":
		return model.StopContentFilter
	default:
		return r
	}
}

// stream maps chat completion chunks to model chunks. Chat Completions
// has no final event the SDK shows (it consumes [DONE]), so a stream is
// complete when it ends cleanly after both a finish_reason and the usage
// chunk, which include_usage makes the last data chunk.
type stream struct {
	p       *Provider
	s       *ssestream.Stream[sdk.ChatCompletionChunk]
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
		if !s.s.Next() {
			if err := s.s.Err(); err != nil {
				return model.Chunk{}, s.p.convert(err)
			}
			s.done = true
			if s.stop != "" && s.usage {
				return model.Chunk{Kind: model.ChunkStop, StopReason: s.stop}, nil
			}
			return model.Chunk{}, io.EOF
		}
		s.chunk(s.s.Current())
	}
	c := s.pending[0]
	s.pending = s.pending[1:]
	return c, nil
}

func (s *stream) emit(c model.Chunk) { s.pending = append(s.pending, c) }

func (s *stream) chunk(c sdk.ChatCompletionChunk) {
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
	if c.JSON.Usage.Valid() {
		s.usage = true
		u := c.Usage
		cached := u.PromptTokensDetails.CachedTokens
		s.emit(model.Chunk{Kind: model.ChunkUsage, Usage: model.Usage{
			// prompt_tokens includes the cached tokens; Usage keeps them apart.
			InputTokens:     u.PromptTokens - cached,
			OutputTokens:    u.CompletionTokens,
			CacheReadTokens: cached,
		}})
	}
}

func (s *stream) Close() error { return s.s.Close() }
