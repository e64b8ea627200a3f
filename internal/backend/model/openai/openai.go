package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/backend/model/sse"
	"github.com/keelrun/keel/internal/kernel/model"
)

// Name is the provider's name in errors and KEEL_MODEL.
const Name = "openai"

// DefaultBaseURL is the API's base: requests go to BaseURL/chat/completions.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config configures a Provider.
type Config struct {
	// Model is the model name, e.g. "gpt-4.1".
	Model string
	// APIKey is the OpenAI API key. It is sent in a header and never
	// appears in an error.
	APIKey string
	// BaseURL overrides https://api.openai.com/v1 (a compatible server, a
	// test server).
	BaseURL string
	// HTTPClient sends the requests; nil: http.DefaultClient.
	HTTPClient *http.Client
	// MaxTokens is sent as max_completion_tokens when the request sets
	// none; default model.DefaultMaxTokens.
	MaxTokens int
}

// Provider streams calls through the Chat Completions API.
type Provider struct {
	cfg      Config
	endpoint string
}

var _ model.Streamer = (*Provider)(nil)

// New builds a Provider. It sends each call once (the transport retries
// whole calls) and reads no environment (no OPENAI_API_KEY, no
// OPENAI_BASE_URL): everything comes from cfg.
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
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	return &Provider{cfg: cfg, endpoint: strings.TrimRight(base, "/") + "/chat/completions"}, nil
}

// Stream starts one streamed Chat Completions call, with usage in the last
// chunk (stream_options.include_usage). An HTTP failure is a
// *model.StatusError.
func (p *Provider) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	body, err := p.body(req)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	hr.Header.Set("Authorization", "Bearer "+p.cfg.APIKey)
	resp, err := p.cfg.HTTPClient.Do(hr)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, p.statusError(resp)
	}
	return &stream{p: p, body: resp.Body, dec: sse.NewDecoder(resp.Body), open: map[int64]bool{}}, nil
}

// The request body, in the Chat Completions wire form.
type (
	request struct {
		Model               string        `json:"model"`
		MaxCompletionTokens int           `json:"max_completion_tokens"`
		Stream              bool          `json:"stream"`
		StreamOptions       streamOptions `json:"stream_options"`
		Messages            []message     `json:"messages"`
		Tools               []toolParam   `json:"tools,omitempty"`
	}
	streamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
	message struct {
		Role       string     `json:"role"`
		Content    *string    `json:"content,omitempty"`
		ToolCalls  []toolCall `json:"tool_calls,omitempty"`
		ToolCallID string     `json:"tool_call_id,omitempty"`
	}
	toolCall struct {
		ID       string   `json:"id"`
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	toolParam struct {
		Type     string      `json:"type"`
		Function functionDef `json:"function"`
	}
	functionDef struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		Parameters  map[string]any `json:"parameters,omitempty"`
	}
)

func text(s string) *string { return &s }

func (p *Provider) body(req model.Request) ([]byte, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = p.cfg.MaxTokens
	}
	r := request{Model: p.cfg.Model, MaxCompletionTokens: maxTokens, Stream: true,
		StreamOptions: streamOptions{IncludeUsage: true}, Messages: []message{}}
	if req.System != "" {
		r.Messages = append(r.Messages, message{Role: "system", Content: text(req.System)})
	}
	for _, m := range req.Messages {
		switch m.Role {
		case model.RoleUser:
			if m.Text != "" {
				r.Messages = append(r.Messages, message{Role: "user", Content: text(m.Text)})
			}
		case model.RoleAssistant:
			a := message{Role: "assistant"}
			if m.Text != "" {
				a.Content = text(m.Text)
			}
			for _, c := range m.ToolCalls {
				args := string(c.Args)
				if args == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, toolCall{ID: c.ID, Type: "function", Function: function{Name: c.Name, Arguments: args}})
			}
			r.Messages = append(r.Messages, a)
		case model.RoleTool:
			for _, tr := range m.ToolResults {
				content := tr.Content
				if tr.IsError {
					// Chat Completions has no error flag on a tool message.
					content = "error: " + content
				}
				r.Messages = append(r.Messages, message{Role: "tool", Content: text(content), ToolCallID: tr.CallID})
			}
		default:
			return nil, fmt.Errorf("openai: unknown role %q", m.Role)
		}
	}
	for _, t := range req.Tools {
		fd := functionDef{Name: t.Name, Description: t.Description}
		if len(t.Schema) > 0 {
			if err := json.Unmarshal(t.Schema, &fd.Parameters); err != nil {
				return nil, fmt.Errorf("openai: tool %q schema: %w", t.Name, err)
			}
		}
		r.Tools = append(r.Tools, toolParam{Type: "function", Function: fd})
	}
	return json.Marshal(r)
}

// errorBody is an error response's body, and an error object inside a
// 200 stream.
type errorBody struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	} `json:"error"`
}

// statusError reads a non-2xx response into a *model.StatusError: only
// error.message, redacted, never the raw body.
func (p *Provider) statusError(resp *http.Response) error {
	se := &model.StatusError{
		Provider: Name,
		Status:   resp.StatusCode,
		// The server chooses the request id: it may echo the key.
		RequestID:  model.Redact(resp.Header.Get("X-Request-Id"), p.cfg.APIKey),
		RetryAfter: model.RetryAfter(resp.Header, time.Now()),
	}
	var e errorBody
	if b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20)); err == nil && json.Unmarshal(b, &e) == nil {
		se.Message = model.Redact(e.Error.Message, p.cfg.APIKey)
	}
	if se.Message == "" {
		se.Message = http.StatusText(se.Status)
	}
	return se
}

// inStreamError is an error object inside a 200 stream.
func (p *Provider) inStreamError(data []byte) error {
	var e errorBody
	_ = json.Unmarshal(data, &e)
	status := http.StatusInternalServerError
	if strings.Contains(e.Error.Type, "rate_limit") || fmt.Sprint(e.Error.Code) == "rate_limit_exceeded" {
		status = http.StatusTooManyRequests
	}
	msg := e.Error.Message
	if msg == "" {
		msg = "error event in stream"
	}
	return &model.StatusError{Provider: Name, Status: status, Message: model.Redact(msg, p.cfg.APIKey)}
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
