package keel

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/model"
)

// Model is a language model as the harness calls it: one complete answer
// per call. Keel's own providers stream and retry whole calls below this
// interface (a cut stream is never half-used); a Model you implement
// yourself must likewise return only complete answers, and should return a
// tool call only when its arguments are complete JSON.
//
// Generate is called once per model call of a Step, possibly again for the
// same transcript after a crash; ctx ends when the Step's budget does. An
// error fails the call (the Step is retried by the state machine).
type Model interface {
	Generate(ctx context.Context, req ModelRequest) (ModelResponse, error)
}

var _ model.Model = Model(nil)

// ModelRequest is one model call: System (the agent's instructions),
// Messages (the transcript so far: the task and the most recent part that
// fits the agent's ContextTokens), Omitted (how many messages between the
// two were left out), Tools (what the model may call, with their JSON
// Schemas), MaxTokens (the output bound), and RunID.
type ModelRequest = model.Request

// ModelResponse is a complete answer: Text, ToolCalls (complete, with
// JSON arguments), Usage (tokens), StopReason, Model, and optionally
// CostMicroUSD (counted against the run's spend limit).
type ModelResponse = model.Response

// Message is one entry of a transcript: Role (user, assistant, tool),
// Text, the assistant's ToolCalls, and the tool's ToolResults.
type Message = model.Message

// ToolCall is a tool call proposed by the model: ID, Name, Args (JSON).
type ToolCall = model.ToolCall

// ToolResult answers one tool call in a transcript: CallID, Content,
// IsError.
type ToolResult = model.ToolResult

// ToolSpec describes a tool to the model: Name, Description, Schema.
type ToolSpec = model.ToolSpec

// Usage counts the tokens of one call: InputTokens, OutputTokens,
// CacheReadTokens, CacheWriteTokens (disjoint).
type Usage = model.Usage

// ModelSpec names one of Keel's providers: "anthropic:MODEL",
// "openai:MODEL" or "bedrock:MODEL_ID" (e.g.
// "anthropic:claude-sonnet-4-5"). The runtime builds it at start with the
// provider's key from the environment (ANTHROPIC_API_KEY, OPENAI_API_KEY)
// or from Secrets Manager (KEEL_MODEL_SECRET_ARN), behind Keel's transport:
// streaming, whole-call retries, idle timeout, 429s as durable waits, the
// shared token-rate limit and the price table. A bad spec is reported by
// [Main] before anything starts.
func ModelSpec(spec string) Model { return specModel{spec: spec} }

// ScriptedModel is a deterministic model that plays script, a JSON
// document of turns:
//
//	{"turns": [{"text": "...", "tool_calls": [{"name": "search", "args": {"q": "x"}}]}],
//	 "final": "the final answer"}
//
// The turn played is chosen by the number of assistant messages already in
// the transcript, so a run replayed after a crash gets the same answers.
// A string argument "{{tool.field}}" is filled from the JSON result of the
// latest call to that tool. It streams like a provider, behind the same
// transport. For tests, demos and crash tests; a malformed script is
// reported by [Main].
func ScriptedModel(script []byte) Model { return scriptModel{script: script} }

// errUnresolved is what a spec or script model answers if called outside
// the runtime, which replaces it with the real model at start.
var errUnresolved = errors.New("keel: this model is built by the runtime (keel.Main); it cannot be called directly")

type specModel struct{ spec string }

func (m specModel) Generate(context.Context, model.Request) (model.Response, error) {
	return model.Response{}, fmt.Errorf("%w: %s", errUnresolved, m.spec)
}

type scriptModel struct{ script []byte }

func (scriptModel) Generate(context.Context, model.Request) (model.Response, error) {
	return model.Response{}, errUnresolved
}
