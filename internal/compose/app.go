package compose

import (
	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/tool"
	"github.com/keelrun/keel/internal/kernel/workspace"
	"github.com/keelrun/keel/internal/sandbox"
	"os/exec"
)

// App is what a Keel program brings: its agents. The public package
// (github.com/keelrun/keel) turns a user's keel.Agent values into an App;
// every role is built from one App and one config.Config.
type App struct {
	Agents []AgentDef
}

// ToolEnv is what the runtime gives an agent's tools when it builds them.
type ToolEnv struct {
	// Artifacts is the runtime's artifact store.
	Artifacts artifact.Store
	// ServerSandbox, set when the agent runs commands in a sandbox on
	// this worker, builds the command of a server the agent's tools talk
	// to over stdio in that sandbox, with a run's workspace when given
	// (sandbox.Sandbox.ServerCommand).
	ServerSandbox func(argv, env []string, network bool, workspace string) (*exec.Cmd, error)
}

// AgentDef is one agent before the runtime's parts exist.
type AgentDef struct {
	Name   string
	System string
	Model  ModelChoice
	// Tools builds the agent's tools on what the runtime gives them.
	Tools func(env ToolEnv) ([]tool.Tool, error)
	// Defaults fill a new run's limits and input policy.
	Defaults  api.AgentDefaults
	MaxTokens int
	// ContextTokens is harness.Agent.ContextTokens (zero: its default).
	ContextTokens int
	// Workspace, when set, gives each run of the agent a workspace.
	Workspace *WorkspaceDef
	// OnLimit is harness.Agent.OnLimit: fail at a limit, or pause to ask.
	OnLimit harness.LimitPolicy
	// Policy is what a Step does with a run another version wrote
	// (agentver.Pin or agentver.Upgrade; empty: Upgrade).
	Policy agentver.Policy
	// Build names the binary in the agent's version; empty: this
	// process's (agentver.Build).
	Build string
}

// WorkspaceDef is an agent's workspace: its limits, and whether its tools
// run commands and under which bounds.
type WorkspaceDef struct {
	Limits   workspace.Limits
	Commands bool
	Policy   sandbox.Policy
}

// ModelChoice is the model an agent declared: exactly one of Spec (a
// provider spec such as "anthropic:claude-sonnet-4-5"), Script (a
// scripted model's JSON) or Model (the user's own), or none (KEEL_MODEL
// must then name one).
type ModelChoice struct {
	Spec   string
	Script []byte
	Model  model.Model
}
