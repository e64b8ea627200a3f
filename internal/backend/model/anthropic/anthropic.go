package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/keelrun/keel/internal/backend/model/sse"
	"github.com/keelrun/keel/internal/kernel/model"
)

// Name is the provider's name in errors and KEEL_MODEL.
const Name = "anthropic"

// DefaultBaseURL is the Messages API's origin.
const DefaultBaseURL = "https://api.anthropic.com"

// APIVersion is the anthropic-version header: the version of the wire
// format this client speaks (the one the official Go SDK v2.15.0 sends,
// against which the testdata was recorded).
const APIVersion = "2026-10-21"

// Config configures a Provider.
type Config struct {
	// Model is the model name, e.g. "claude-sonnet-4-5".
	Model string
	// APIKey is the Anthropic API key. It is sent in a header and never
	// appears in an error.
	APIKey string
	// BaseURL overrides https://api.anthropic.com (a proxy, a test server).
	BaseURL string
	// HTTPClient sends the requests; nil: http.DefaultClient.
	HTTPClient *http.Client
	// MaxTokens is sent when the request sets none; default
	// model.DefaultMaxTokens.
	MaxTokens int
}

// Provider streams calls through the Messages API.
type Provider struct {
	cfg      Config
	endpoint string
}

var _ model.Streamer = (*Provider)(nil)

// New builds a Provider. It sends each call once: the transport
// (model.NewTransport) retries whole calls, and a retry in here would hide
// attempts from it. It reads no environment: everything comes from cfg.
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
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	return &Provider{cfg: cfg, endpoint: strings.TrimRight(base, "/") + "/v1/messages"}, nil
}

// Stream starts one streamed Messages call. An HTTP failure is a
// *model.StatusError; a connection failure is returned as net/http gives
// it (it names the URL, never the key).
func (p *Provider) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	body, err := p.body(req)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	hr.Header.Set("X-Api-Key", p.cfg.APIKey)
	hr.Header.Set("Anthropic-Version", APIVersion)
	resp, err := p.cfg.HTTPClient.Do(hr)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, p.statusError(resp)
	}
	return &stream{p: p, body: resp.Body, dec: sse.NewDecoder(resp.Body), requestID: resp.Header.Get("Request-Id"), tools: map[int64]bool{}}, nil
}

// The request body, in the Messages API's wire form.
type (
	request struct {
		Model     string      `json:"model"`
		MaxTokens int         `json:"max_tokens"`
		Stream    bool        `json:"stream"`
		System    []block     `json:"system,omitempty"`
		Messages  []message   `json:"messages"`
		Tools     []toolParam `json:"tools,omitempty"`
	}
	message struct {
		Role    string  `json:"role"`
		Content []block `json:"content"`
	}
	// block is a text, tool_use or tool_result content block; each sets
	// only its own fields.
	block struct {
		Type      string          `json:"type"`
		Text      *string         `json:"text,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Input     json.RawMessage `json:"input,omitempty"`
		ToolUseID string          `json:"tool_use_id,omitempty"`
		Content   []block         `json:"content,omitempty"`
		IsError   *bool           `json:"is_error,omitempty"`
	}
	toolParam struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		InputSchema map[string]any `json:"input_schema"`
	}
)

func textBlock(s string) block { return block{Type: "text", Text: &s} }

func (p *Provider) body(req model.Request) ([]byte, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = p.cfg.MaxTokens
	}
	r := request{Model: p.cfg.Model, MaxTokens: maxTokens, Stream: true, Messages: []message{}}
	if req.System != "" {
		r.System = []block{textBlock(req.System)}
	}
	for _, m := range req.Messages {
		var blocks []block
		if m.Text != "" {
			blocks = append(blocks, textBlock(m.Text))
		}
		for _, c := range m.ToolCalls {
			args := c.Args
			if len(args) == 0 {
				args = json.RawMessage(`{}`)
			}
			if !json.Valid(args) {
				return nil, fmt.Errorf("anthropic: tool call %q: arguments are not JSON", c.ID)
			}
			blocks = append(blocks, block{Type: "tool_use", ID: c.ID, Name: c.Name, Input: args})
		}
		for _, tr := range m.ToolResults {
			isErr := tr.IsError
			b := block{Type: "tool_result", ToolUseID: tr.CallID, IsError: &isErr}
			if tr.Content != "" {
				// The API refuses an empty text block; a result without
				// content is sent without one.
				b.Content = []block{textBlock(tr.Content)}
			}
			blocks = append(blocks, b)
		}
		if len(blocks) == 0 {
			continue
		}
		switch m.Role {
		case model.RoleAssistant:
			r.Messages = append(r.Messages, message{Role: "assistant", Content: blocks})
		case model.RoleUser, model.RoleTool:
			// Tool results travel in a user turn in the Messages API.
			r.Messages = append(r.Messages, message{Role: "user", Content: blocks})
		default:
			return nil, fmt.Errorf("anthropic: unknown role %q", m.Role)
		}
	}
	for _, t := range req.Tools {
		schema, err := inputSchema(t.Schema)
		if err != nil {
			return nil, fmt.Errorf("anthropic: tool %q: %w", t.Name, err)
		}
		r.Tools = append(r.Tools, toolParam{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return json.Marshal(r)
}

// inputSchema is a tool's JSON schema as the API takes it: an object
// schema, whatever else it says kept as it is.
func inputSchema(raw json.RawMessage) (map[string]any, error) {
	m := map[string]any{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
		if m == nil {
			m = map[string]any{}
		}
	}
	m["type"] = "object"
	return m, nil
}
