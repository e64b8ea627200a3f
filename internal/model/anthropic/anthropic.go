package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/keelrun/keel/internal/model"
)

// Name is the provider's name in errors and KEEL_MODEL.
const Name = "anthropic"

// Config configures a Provider.
type Config struct {
	// Model is the model name, e.g. "claude-sonnet-4-5".
	Model string
	// APIKey is the Anthropic API key. It is sent in a header and never
	// appears in an error.
	APIKey string
	// BaseURL overrides https://api.anthropic.com/ (a proxy, a test server).
	BaseURL string
	// HTTPClient is the client the SDK uses; nil: the SDK's default.
	HTTPClient *http.Client
	// MaxTokens is sent when the request sets none; default
	// model.DefaultMaxTokens.
	MaxTokens int
}

// Provider streams calls through the Messages API.
type Provider struct {
	client sdk.Client
	cfg    Config
}

var _ model.Streamer = (*Provider)(nil)

// New builds a Provider. The SDK's own retries are off: the transport
// (model.NewTransport) retries whole calls, and a retry inside the SDK would
// hide attempts from it. The SDK does not read the environment either:
// everything comes from cfg.
func New(cfg Config) (*Provider, error) {
	if cfg.Model == "" {
		return nil, errors.New("anthropic: no model")
	}
	if cfg.APIKey == "" {
		return nil, errors.New("anthropic: no API key")
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = model.DefaultMaxTokens
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Provider{client: sdk.NewClient(opts...), cfg: cfg}, nil
}

// Stream starts one streamed Messages call. An HTTP failure is a
// *model.StatusError.
func (p *Provider) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	s := p.client.Messages.NewStreaming(ctx, params)
	if err := s.Err(); err != nil {
		_ = s.Close()
		return nil, p.convert(err)
	}
	return &stream{p: p, s: s, tools: map[int64]bool{}}, nil
}

func (p *Provider) params(req model.Request) (sdk.MessageNewParams, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = p.cfg.MaxTokens
	}
	params := sdk.MessageNewParams{
		Model:     sdk.Model(p.cfg.Model),
		MaxTokens: int64(maxTokens),
	}
	if req.System != "" {
		params.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	for _, m := range req.Messages {
		var blocks []sdk.ContentBlockParamUnion
		if m.Text != "" {
			blocks = append(blocks, sdk.NewTextBlock(m.Text))
		}
		for _, c := range m.ToolCalls {
			args := c.Args
			if len(args) == 0 {
				args = json.RawMessage(`{}`)
			}
			blocks = append(blocks, sdk.NewToolUseBlock(c.ID, args, c.Name))
		}
		for _, r := range m.ToolResults {
			blocks = append(blocks, sdk.NewToolResultBlock(r.CallID, r.Content, r.IsError))
		}
		if len(blocks) == 0 {
			continue
		}
		switch m.Role {
		case model.RoleAssistant:
			params.Messages = append(params.Messages, sdk.NewAssistantMessage(blocks...))
		case model.RoleUser, model.RoleTool:
			// Tool results travel in a user turn in the Messages API.
			params.Messages = append(params.Messages, sdk.NewUserMessage(blocks...))
		default:
			return params, fmt.Errorf("anthropic: unknown role %q", m.Role)
		}
	}
	for _, t := range req.Tools {
		schema, err := inputSchema(t.Schema)
		if err != nil {
			return params, fmt.Errorf("anthropic: tool %q: %w", t.Name, err)
		}
		tp := &sdk.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = param.NewOpt(t.Description)
		}
		params.Tools = append(params.Tools, sdk.ToolUnionParam{OfTool: tp})
	}
	return params, nil
}

func inputSchema(raw json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	var s sdk.ToolInputSchemaParam
	if len(raw) == 0 {
		return s, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return s, fmt.Errorf("schema: %w", err)
	}
	s.Properties = m["properties"]
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				s.Required = append(s.Required, name)
			}
		}
	}
	for k, v := range m {
		switch k {
		case "type", "properties", "required":
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = map[string]any{}
			}
			s.ExtraFields[k] = v
		}
	}
	return s, nil
}

// convert turns an SDK error into a *model.StatusError (HTTP and in-stream
// API errors), an ErrMalformed (an event that did not decode), or passes
// it on (connection and context errors, which carry no body). The SDK's
// own error text is never used: it embeds the raw response body, which
// may echo the key.
func (p *Provider) convert(err error) error {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		se := &model.StatusError{
			Provider:  Name,
			Status:    apiErr.StatusCode,
			RequestID: apiErr.RequestID,
			Message:   model.Redact(apiErr.Message, p.cfg.APIKey),
		}
		if apiErr.Response != nil {
			se.RetryAfter = model.RetryAfter(apiErr.Response.Header, time.Now())
			if se.RequestID == "" {
				se.RequestID = apiErr.Response.Header.Get("request-id")
			}
		}
		// The request id is the server's to choose: it may echo the key.
		se.RequestID = model.Redact(se.RequestID, p.cfg.APIKey)
		if se.Message == "" {
			se.Message = http.StatusText(se.Status)
		}
		if se.Status < 400 {
			// An error event inside a 200 stream: its type says what
			// went wrong.
			se.Status = inStreamStatus(string(apiErr.Type()))
			se.Message = string(apiErr.Type()) + ": " + se.Message
		}
		return se
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) {
		return fmt.Errorf("%w: anthropic event: %s", model.ErrMalformed, model.Redact(err.Error(), p.cfg.APIKey))
	}
	return err
}

// inStreamStatus maps the type of an in-stream error event to the HTTP
// status the same error has outside a stream.
func inStreamStatus(typ string) int {
	switch typ {
	case "overloaded_error":
		return 529
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	default:
		return http.StatusInternalServerError
	}
}

// stream maps Messages API events to model chunks.
type stream struct {
	p       *Provider
	s       *ssestream.Stream[sdk.MessageStreamEventUnion]
	tools   map[int64]bool // content block indexes that are tool_use blocks
	pending []model.Chunk
	stop    string
}

func (s *stream) Next() (model.Chunk, error) {
	for len(s.pending) == 0 {
		if !s.s.Next() {
			if err := s.s.Err(); err != nil {
				return model.Chunk{}, s.p.convert(err)
			}
			return model.Chunk{}, io.EOF
		}
		s.event(s.s.Current())
	}
	c := s.pending[0]
	s.pending = s.pending[1:]
	return c, nil
}

func (s *stream) emit(c model.Chunk) { s.pending = append(s.pending, c) }

func (s *stream) event(ev sdk.MessageStreamEventUnion) {
	switch ev.Type {
	case "message_start":
		s.emit(model.Chunk{Kind: model.ChunkStart, ResponseID: model.Redact(ev.Message.ID, s.p.cfg.APIKey), Model: model.Redact(string(ev.Message.Model), s.p.cfg.APIKey)})
		u := ev.Message.Usage
		s.emit(model.Chunk{Kind: model.ChunkUsage, Usage: model.Usage{
			InputTokens:      u.InputTokens,
			OutputTokens:     u.OutputTokens,
			CacheReadTokens:  u.CacheReadInputTokens,
			CacheWriteTokens: u.CacheCreationInputTokens,
		}})
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
		s.stop = string(ev.Delta.StopReason)
		u := ev.Usage
		s.emit(model.Chunk{Kind: model.ChunkUsage, Usage: model.Usage{
			InputTokens:      u.InputTokens,
			OutputTokens:     u.OutputTokens,
			CacheReadTokens:  u.CacheReadInputTokens,
			CacheWriteTokens: u.CacheCreationInputTokens,
		}})
	case "message_stop":
		// The only event that completes a stream.
		s.emit(model.Chunk{Kind: model.ChunkStop, StopReason: s.stop})
	}
}

func (s *stream) Close() error { return s.s.Close() }
