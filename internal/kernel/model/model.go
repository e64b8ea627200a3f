package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Role of a message in the transcript.
type Role string

// Roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one transcript entry. An assistant message may carry tool
// calls; a tool message carries the results of those calls.
type Message struct {
	Role        Role         `json:"role"`
	Text        string       `json:"text,omitempty"`
	ToolCalls   []ToolCall   `json:"tool_calls,omitempty"`
	ToolResults []ToolResult `json:"tool_results,omitempty"`
}

// ToolCall is a complete tool call proposed by the model.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// ToolResult answers one tool call.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
}

// Request is one model call.
type Request struct {
	// RunID keys the per-run 429 counter; the per-endpoint counter is keyed
	// by the transport's endpoint (see TransportOptions.Endpoint).
	RunID     string
	System    string
	Messages  []Message
	Tools     []ToolSpec
	MaxTokens int
	// Omitted counts the transcript's messages that the agent's context
	// window left out of Messages, between Messages[0] (the task) and
	// Messages[1]; OmittedAssistant how many of them were the model's own
	// answers. Both are zero when Messages is the whole transcript. A
	// provider sends Messages as they are; the scripted model counts its
	// turns with OmittedAssistant.
	Omitted, OmittedAssistant int
}

// Usage counts tokens of one call. InputTokens are the uncached input
// tokens: providers that report cached tokens inside their input count
// (OpenAI's prompt_tokens) are normalised so that the four fields are
// disjoint and a price table can add them up.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}

// Total is input + output tokens.
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }

// Response is a complete, accumulated answer.
type Response struct {
	Text       string     `json:"text,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	Usage      Usage      `json:"usage"`
	StopReason string     `json:"stop_reason"`
	ResponseID string     `json:"response_id,omitempty"`
	Model      string     `json:"model,omitempty"`
	// CostMicroUSD is the call's cost from the price table, when known.
	CostMicroUSD int64 `json:"cost_micro_usd,omitempty"`
	// Attempts lists the failed attempts the transport retried before this
	// answer, for the harness to record.
	Attempts []Attempt `json:"attempts,omitempty"`
}

// Attempt is one failed try of a call.
type Attempt struct {
	Kind       string        `json:"kind"` // one of the Attempt* kinds below
	Status     int           `json:"status,omitempty"`
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	Error      string        `json:"error"`
	// Endpoint is the transport's endpoint key (provider:model), so that a
	// rate_limited attempt can be counted per endpoint in the event log.
	Endpoint string `json:"endpoint,omitempty"`
}

// Attempt kinds. Every kind but AttemptClientError is retried.
const (
	AttemptStreamCut   = "stream_cut"   // the stream ended or broke before its final event
	AttemptStall       = "stall"        // no chunk within the idle timeout
	AttemptMalformed   = "malformed"    // an event that did not decode
	AttemptRateLimited = "rate_limited" // HTTP 429 (or the provider's throttling error)
	AttemptServerError = "server_error" // HTTP 5xx (or the provider's overloaded error)
	AttemptConnection  = "connection"   // the request never got an answer: reset, refused, EOF
	AttemptClientError = "client_error" // any other 4xx, or a request the provider refused: not retried
)

// Stop reasons, normalised across providers (the Anthropic vocabulary).
// A provider's reason with no equivalent is passed through unchanged.
const (
	StopEndTurn       = "end_turn"
	StopToolUse       = "tool_use"
	StopMaxTokens     = "max_tokens"
	StopSequence      = "stop_sequence"
	StopContentFilter = "content_filter"
)

// DefaultMaxTokens is the output limit a provider sends when
// Request.MaxTokens is zero; the transport reserves it in the token limiter.
const DefaultMaxTokens = 4096

// Model is what the harness calls.
type Model interface {
	// Generate makes one call and returns a complete response, or an error.
	// A *RateLimitedError asks the caller to come back later (a durable
	// wait) instead of sleeping.
	Generate(ctx context.Context, req Request) (Response, error)
}

// ChunkKind is what a chunk carries.
type ChunkKind int

// Chunk kinds, in the order a well-formed stream sends them.
const (
	ChunkStart         ChunkKind = iota // ResponseID, Model
	ChunkText                           // Text delta
	ChunkToolCallStart                  // Index, ID, Name
	ChunkToolArgsDelta                  // Index, Text (a fragment of the JSON args)
	ChunkToolCallEnd                    // Index
	ChunkUsage                          // Usage (may come more than once; the last wins per field)
	ChunkStop                           // StopReason: the final chunk
)

// Chunk is one streamed piece of a response.
type Chunk struct {
	Kind       ChunkKind
	Index      int
	ID         string
	Name       string
	Text       string
	Usage      Usage
	StopReason string
	ResponseID string
	Model      string
}

// Stream yields chunks until io.EOF. Next blocks until a chunk arrives, the
// stream fails, or ctx (given to Stream) is done.
type Stream interface {
	Next() (Chunk, error)
	Close() error
}

// Streamer starts one streamed call. A provider returns a *StatusError for
// an HTTP failure before the stream starts.
type Streamer interface {
	Stream(ctx context.Context, req Request) (Stream, error)
}

// ErrIncomplete marks a stream that ended before its final chunk, or a tool
// call whose arguments never completed: the whole call failed.
var ErrIncomplete = errors.New("model stream incomplete")

// ErrMalformed marks a streamed event that did not decode. Providers wrap
// their decoding errors with it; the transport retries the whole call.
var ErrMalformed = errors.New("model stream event malformed")

// StatusError is an HTTP-level failure from a provider.
type StatusError struct {
	Provider   string
	Status     int
	RequestID  string
	RetryAfter time.Duration
	Message    string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s: status %d (request id %q): %s", e.Provider, e.Status, e.RequestID, e.Message)
}

// RateLimitedError tells the harness to wait durably before calling again.
type RateLimitedError struct {
	RetryAfter time.Duration
	Attempts   []Attempt
	// Endpoint is the transport's endpoint key.
	Endpoint string
	// Limiter is true when the process's own token-rate limiter, not the
	// provider, asked for the wait (no request was sent).
	Limiter bool
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("model rate limited: retry after %s", e.RetryAfter)
}

// CallError is a call that failed for good: a non-retryable error, or the
// last of MaxAttempts retryable ones. Attempts lists every failed attempt,
// the last one included; Err is the last attempt's error (a *StatusError for
// an HTTP failure, ErrIncomplete for a cut stream, a context error when the
// caller gave up).
type CallError struct {
	Provider string
	Attempts []Attempt
	Err      error
}

func (e *CallError) Error() string {
	return fmt.Sprintf("%s model call failed after %d attempt(s): %v", e.Provider, len(e.Attempts), e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }

// Permanent reports whether the call failed in a way that calling again
// cannot fix: its last attempt was a client error (a 4xx other than 429,
// or a request the provider refused). The harness fails the run at once
// on such an error instead of retrying the step.
func (e *CallError) Permanent() bool {
	return len(e.Attempts) > 0 && e.Attempts[len(e.Attempts)-1].Kind == AttemptClientError
}
