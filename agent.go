package keel

import (
	"errors"
	"fmt"
	"time"

	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/harness"
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
	// OnLimit says what a run does when it would pass one of its limits
	// (steps, tool calls, tokens, spend): the zero value fails it with
	// budget_exceeded; Pause asks a person to raise the limit. The
	// deadline (Limits.Timeout) always fails the run.
	OnLimit LimitPolicy
	// Versions says what a Step does with a run whose records another
	// version of this agent wrote (a deploy, or a restart of dev with a
	// new binary). An agent's version is a hash of Instructions, the
	// model, each tool's name, mode, argument schema and promises,
	// Limits, InputPolicy and the build; every run records the version
	// it was created under. Empty means [VersionUpgrade], on every
	// platform: see docs/deploying.md#runs-in-flight for why.
	Versions VersionPolicy
}

// LimitPolicy is an agent's answer to a run at one of its limits.
type LimitPolicy struct {
	// Pause, instead of failing the run, records an approval of the tool
	// "keel.raise_limit" whose args name the limit and the raise asked
	// for, notifies people through the configured channels (with a
	// one-time link) and waits, holding no process, like any approval.
	// Approved (POST /v1/runs/{id}/limits, `keel raise`, the link, or the
	// approval's own endpoint), the limit is raised by that amount with a
	// budget_raised event naming who approved it, and the run goes on;
	// denied, the run fails as it would have, naming who stopped it.
	Pause bool
	// RaiseBy is the raise a pause asks for, per limit; a field left zero
	// asks for the limit's current size again (doubling it). Its Timeout
	// must be zero: the deadline is never raised.
	RaiseBy Limits
}

func (p LimitPolicy) check() error {
	if r := p.RaiseBy; r.MaxSteps < 0 || r.MaxToolCalls < 0 || r.MaxTokens < 0 || r.MaxSpendMicroUSD < 0 || r.Timeout != 0 {
		return errors.New("OnLimit.RaiseBy: raises must not be negative, and its Timeout must be zero (the deadline is never raised)")
	}
	return nil
}

// policy is p as the harness reads it.
func (p LimitPolicy) policy() harness.LimitPolicy {
	r := p.RaiseBy
	return harness.LimitPolicy{Pause: p.Pause, RaiseBy: run.Limits{MaxSteps: r.MaxSteps, MaxToolCalls: r.MaxToolCalls,
		MaxTokens: r.MaxTokens, MaxSpendMicroUSD: r.MaxSpendMicroUSD}}
}

// VersionPolicy is [Agent.Versions].
type VersionPolicy string

// The version policies.
const (
	// VersionUpgrade moves a run to the running version at its next
	// Step, after a check of what it has open: a pending operation, a
	// pending or granted approval, an open tool call. A run that
	// depends on a tool that is gone, changed mode or promises, or whose
	// recorded arguments no longer validate (for an approval or an
	// operation: whose schema changed at all) is not moved: it waits
	// for a person (needs_human) with the difference named. Otherwise
	// the Step records agent_upgraded naming both versions.
	VersionUpgrade VersionPolicy = "upgrade"
	// VersionPin runs a run's Steps only under the version it was
	// created on. A worker of another version never runs it: it stops
	// for a person, naming both versions (keel dev runs one binary at a
	// time, so there a pinned run of an older version waits for that
	// binary to be started again, or for a person to cancel it).
	VersionPin VersionPolicy = "pin"
)

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

// policy is the runtime's spelling of v, checked.
func (v VersionPolicy) policy() (agentver.Policy, error) {
	switch v {
	case "", VersionUpgrade:
		return agentver.Upgrade, nil
	case VersionPin:
		return agentver.Pin, nil
	}
	return "", fmt.Errorf("agent field Versions %q: want %q or %q", v, VersionUpgrade, VersionPin)
}
