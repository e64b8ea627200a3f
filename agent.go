package keel

import (
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
)

// Agent is one kind of run: a model given instructions and tools. A run
// names its agent when it is created (POST /v1/runs {"agent": Name}); every
// Step of the run, on whichever worker, resolves the agent by that name, so
// an agent must be registered under the same Name in every process of a
// deployment (which [Main] guarantees: one binary plays every role).
//
// An Agent is a value: build it in main and pass it to [Main].
type Agent struct {
	// Name identifies the agent in runs and in the API: 1 to 64 of
	// A-Z a-z 0-9 _ -. Required, unique among the agents given to Main.
	Name string
	// Instructions are the system prompt of every model call.
	Instructions string
	// Model answers the calls: [ModelSpec], [ScriptedModel], or any value
	// implementing [Model]. KEEL_MODEL, when set, replaces it (an
	// operator's override, and how crash tests replay a script). Nil
	// requires KEEL_MODEL.
	Model Model
	// Tools the model may call: [ReadOnly], [ConfirmOnce] and [Effect].
	// Names must be unique within the agent.
	Tools []Tool
	// MCPServers are MCP servers whose tools the model may call too, each
	// under the mode rule of [MCPServer].
	MCPServers []MCPServer
	// Limits are the defaults for runs of this agent; a run's own limits
	// (POST /v1/runs "limits") override them field by field, and fields
	// left zero in both fall back to Keel's defaults (200 steps, 500 tool
	// calls, 2,000,000 tokens, 20 USD, no deadline).
	Limits Limits
	// InputPolicy is the default for input sent while a run is active
	// (POST /v1/runs/{id}/input); empty means [InputQueue].
	InputPolicy InputPolicy
	// MaxOutputTokens bounds each model answer; zero means 4096.
	MaxOutputTokens int
	// ContextTokens is the model's context window (tokens estimated at
	// four characters each): a model call is sent the task and the most
	// recent part of the transcript that fits, and a worker keeps no more
	// than that of a run in memory; the store keeps the whole transcript.
	// Zero means 100,000; a value set must exceed MaxOutputTokens, since
	// the window holds the answer too. Main refuses a negative one.
	ContextTokens int
	// Workspace, when set, gives every run of the agent a directory tree
	// versioned with its checkpoints, and commands in a sandbox.
	Workspace *WorkspaceConfig
}

// Limits bound a run. Every Step checks them before it calls the model or
// a tool; a run that reaches one ends as failed with budget_exceeded in its
// log. Zero fields take Keel's defaults.
type Limits struct {
	MaxSteps     int64
	MaxToolCalls int64
	// MaxTokens counts input and output tokens of every model call.
	MaxTokens int64
	// MaxSpendMicroUSD is the spend limit in millionths of a US dollar,
	// priced from the provider's price table.
	MaxSpendMicroUSD int64
	// Timeout sets each run's deadline to its creation time plus Timeout,
	// unless the run names its own deadline.
	Timeout time.Duration
}

// InputPolicy says what happens to input that arrives while a run is
// active.
type InputPolicy = run.InputPolicy

// The input policies.
const (
	// InputReject refuses the input (409 input_rejected).
	InputReject = run.InputReject
	// InputQueue keeps the input for the run's next turn.
	InputQueue = run.InputQueue
	// InputInterrupt stops the current turn after the tool call in
	// progress and starts a new turn with the input.
	InputInterrupt = run.InputInterrupt
	// InputRollback refuses the input and asks the caller to fork the run
	// from a checkpoint instead.
	InputRollback = run.InputRollback
)
