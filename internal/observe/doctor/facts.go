package doctor

import "time"

// Facts are what a running Keel deployment reports about its own
// composition (GET /v1/deployment): read from the configuration it was
// built from and the agents and tools it holds, never from a prompt.
type Facts struct {
	Keel struct {
		Version string `json:"version"`
		Commit  string `json:"commit,omitempty"`
	} `json:"keel"`
	// Executor runs the state machine: "local" (keel dev's embedded
	// States-Language executor) or "aws-stepfunctions".
	Executor  string  `json:"executor"`
	Store     Backend `json:"store"`
	Artifacts Backend `json:"artifacts"`
	// MaxInlineState is the largest checkpoint state kept in the store
	// row; larger states go to the artifact store.
	MaxInlineState int     `json:"max_inline_state_bytes"`
	Agents         []Agent `json:"agents"`
	// ApprovalTimeout is how long an approval waits before the run fails.
	ApprovalTimeout time.Duration `json:"approval_timeout_ns"`
	// LeaseTTL is how long a dead worker's lease outlives it.
	LeaseTTL time.Duration `json:"lease_ttl_ns"`
	// Sweeper says whether runs are compared with their executions.
	Sweeper string `json:"sweeper"`
	// Bundle says when the debug bundle is written and where it is served.
	Bundle Observability `json:"observability"`
	// Workspaces is how runs' workspaces are kept and their commands
	// isolated (questions 3, 5 and 9).
	Workspaces Workspaces `json:"workspaces"`
}

// Workspaces is the composition of runs' workspaces.
type Workspaces struct {
	// Agents are the agents whose runs have a workspace; empty: none.
	Agents []AgentWorkspace `json:"agents"`
	// Root is where a worker keeps its copies of runs' trees, one
	// directory per run (KEEL_WORKSPACE_ROOT): a cache of the record.
	Root string `json:"root,omitempty"`
	// Sandbox is KEEL_SANDBOX as composed: "bubblewrap" or "unsafe", or
	// SandboxCommandRunner when KEEL_COMMAND_RUNNER is set. It applies to
	// the agents whose Commands is set.
	Sandbox string `json:"sandbox,omitempty"`
	// ManifestKey and BlobKey are the artifact keys a version is stored
	// under, with {run_id} and {sha256} in place.
	ManifestKey string `json:"manifest_key,omitempty"`
	BlobKey     string `json:"blob_key,omitempty"`
}

// AgentWorkspace is one agent's workspace.
type AgentWorkspace struct {
	Agent string `json:"agent"`
	// Commands: the agent's tools run commands in the sandbox.
	Commands bool `json:"commands"`
	// Network: the commands' policy opens the network (its host list is
	// recorded, not enforced).
	Network bool `json:"network,omitempty"`
}

// Backend is a store or an artifact store.
type Backend struct {
	Kind     string `json:"kind"`     // sqlite, dynamo, fs, s3
	Location string `json:"location"` // a path, a table or a bucket
}

// Agent is one agent the deployment runs.
type Agent struct {
	Name  string `json:"name"`
	Model string `json:"model"` // a provider spec, "scripted" or "custom"
	// ModelCredential says where the model's key comes from: an
	// environment variable or a Secrets Manager ARN read by the runtime,
	// "none" (a scripted model), or "caller" (a custom model).
	ModelCredential string `json:"model_credential"`
	// Priced: the transport's price table has the model, so spend is
	// counted and a spend limit can stop a run.
	Priced bool `json:"priced"`
	// Limits are the defaults of the agent's runs (a run may ask for
	// others); Timeout, when set, bounds a run's life.
	Limits struct {
		MaxSteps         int64 `json:"max_steps"`
		MaxToolCalls     int64 `json:"max_tool_calls"`
		MaxTokens        int64 `json:"max_tokens"`
		MaxSpendMicroUSD int64 `json:"max_spend_micro_usd"`
	} `json:"limits"`
	Timeout time.Duration `json:"timeout_ns,omitempty"`
	Tools   []Tool        `json:"tools"`
}

// Tool is one tool of an agent, as the runtime holds it.
type Tool struct {
	Name string `json:"name"`
	// Mode is the permission mode: safe_readonly, confirm_once, mutating.
	Mode string `json:"mode"`
	// Effect: the tool is an external side effect run through the
	// operation protocol (intent before dispatch, reconcile on recovery).
	Effect      bool   `json:"effect"`
	Destination string `json:"destination,omitempty"`
	// Idempotent and Lookup are what the destination promises.
	Idempotent bool `json:"idempotent,omitempty"`
	Lookup     bool `json:"lookup,omitempty"`
	// Long: the tool runs in the long-running task, not a bounded step.
	Long bool `json:"long,omitempty"`
	// DeclaresSecrets: the tool names its credentials, which the harness
	// redacts from everything it records or shows the model.
	DeclaresSecrets bool `json:"declares_secrets,omitempty"`
}

// Observability is how a run can be read after the fact.
type Observability struct {
	BundleOn    []string `json:"bundle_written_on"` // final statuses whose Finalize writes the bundle
	BundleFiles []string `json:"bundle_files"`
	Endpoints   []string `json:"endpoints"`
	// EventChain: every event is hash-chained to the one before it.
	EventChain bool `json:"event_chain"`
	// OTLP is the OTEL_EXPORTER_OTLP_ENDPOINT the process has, "" none.
	OTLP string `json:"otlp_endpoint,omitempty"`
}
