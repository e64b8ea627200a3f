// Package model is the seam between the harness and language models.
//
// Providers (anthropic, openai, bedrock, scripted) implement [Streamer]: one
// streamed call, as a sequence of [Chunk]s. The transport layer wraps a
// Streamer into a [Model] that returns only complete responses: a stream that
// ends before its final chunk is a failed call, its fragment dropped, and a
// tool call is returned only when its JSON arguments are complete and parse.
// The harness sees nothing else.
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
	// RunID and Endpoint key the per-run, per-endpoint 429 counters.
	RunID     string
	System    string
	Messages  []Message
	Tools     []ToolSpec
	MaxTokens int
}

// Usage counts tokens of one call.
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
	Kind       string        `json:"kind"` // "stream_cut", "stall", "rate_limited", "server_error", "connection"
	Status     int           `json:"status,omitempty"`
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	Error      string        `json:"error"`
}

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
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("model rate limited: retry after %s", e.RetryAfter)
}
