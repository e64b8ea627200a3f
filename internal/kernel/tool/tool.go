// Package tool defines what an agent can call: a small Tool interface, a
// registry, argument validation against each tool's JSON Schema, and the
// permission mode that decides whether a call runs, asks once per session,
// or asks for its exact arguments every time.
//
// A tool that changes the outside world also implements [Effectful]: the
// harness then never calls Run, but records the intent, dispatches through
// the tool's destination with the operation id as idempotency key, and
// reconciles on recovery (package ops).
//
// Tools get credentials from the runtime (their constructors), never from
// their arguments: arguments are shown to the model, stored in events and
// plan items, and hashed for approvals.
package tool

import (
	"context"
	"encoding/json"
	"time"

	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
)

// Info describes a tool to the model and to the harness.
type Info struct {
	Name        string
	Description string
	// Schema is the JSON Schema of the arguments object.
	Schema json.RawMessage
	Mode   run.Mode
	// Long marks a tool that may outlive a bounded step (a Lambda): the
	// harness spills the run to the long-running task before calling it.
	Long bool
	// CostMicroUSD is what one call costs, in millionths of a US dollar:
	// counted against the run's spend limit with the model's cost, and
	// reserved before the call, so that concurrent calls never together
	// pass the limit. Zero: the call costs nothing.
	CostMicroUSD int64
}

// Call is one validated invocation.
type Call struct {
	RunID      string
	PlanItemID string
	// CheckpointID is the checkpoint the run resumed from for this call:
	// artifacts a tool writes are keyed under it.
	CheckpointID string
	Args         json.RawMessage
	// Progress reports done of total units; the harness records it as a
	// tool_progress event. Safe to call from any goroutine; may be nil-safe no-op.
	Progress func(done, total int64, note string)
}

// Result is what a tool returns: Content goes to the model, Data is recorded.
type Result struct {
	Content string          `json:"content"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Tool is something the agent can call.
type Tool interface {
	Info() Info
	// Run performs the call. Read-only tools may be run again after a
	// crash; anything with an external effect must be Effectful instead.
	Run(ctx context.Context, c Call) (Result, error)
}

// SecretHolder is a tool that holds credentials (from its constructor,
// never its arguments) and names them, so that the harness replaces each
// with "[redacted]" in whatever it records or shows the model: results,
// errors, progress notes, operation outcomes. Secrets shorter than 8 bytes
// are not redacted (they would match ordinary text).
type SecretHolder interface {
	Secrets() []string
}

// Effectful is a tool whose call is an external side effect. Run is not
// used for it.
type Effectful interface {
	Tool
	ops.Destination
	// Intent checks the call and names what it will change before anything
	// is recorded: the artifact hash the effect carries (re-validated
	// here, e.g. a report's content against its approved hash).
	Intent(ctx context.Context, c Call) (Intent, error)
	// Describe turns a confirmed outcome into what the model is told.
	Describe(op run.Operation) Result
}

// Judged is a tool whose mode, and whether it is an effect, follow terms
// that can change while the process lives — an MCP server's tool, whose
// annotations the server may change at any time — so the tool registered
// (what the model is shown) is not necessarily the one a run's call runs
// as. Before the harness plans, permits, runs or reconciles a call of
// it, it asks Judge for the tool under the terms runID holds (at most
// once per Step); the tool returned is not judged again. Judge may read
// records or a remote server; its error refuses the call: the harness
// records tool_failed and sends nothing.
type Judged interface {
	Tool
	Judge(ctx context.Context, runID string) (Tool, error)
}

// Intent is what an effectful call will change.
type Intent struct {
	ArtifactHash string
}

// Delegating is a tool whose call starts a child run of another agent of
// the same program (a sub-agent). The harness never calls Run for it: it
// starts the child under the operation protocol (the child's run id is
// derived from the operation, so the call has exactly one child whatever
// crashes), ends the parent's Step until every child of the model's answer
// has ended, and answers the call with the child's outcome.
type Delegating interface {
	Tool
	Delegation() Delegation
}

// Delegation is what a Delegating tool starts.
type Delegation struct {
	// Agent names the child's agent; the program must have it.
	Agent string
	// Limits narrow the child's share of its parent's remaining budget:
	// a field set here caps the share, a zero field leaves it. MaxSteps
	// is the child's own (default 200); Deadline is ignored (Timeout).
	Limits run.Limits
	// Timeout, when set, ends the child's deadline at its start plus
	// Timeout, or at its parent's deadline when that comes first.
	Timeout time.Duration
	// InheritGrants runs the child in its parent's session, so the
	// confirm-once grants given there cover it; otherwise the child has a
	// session of its own and asks again.
	InheritGrants bool
}

// DelegationArgs is the arguments object of every Delegating tool.
type DelegationArgs struct {
	// Input is the child run's request.
	Input string `json:"input"`
}

// DelegationSchema is the JSON Schema of DelegationArgs.
const DelegationSchema = `{"type":"object","properties":{"input":{"type":"string","minLength":1,"description":"The task for the sub-agent, with everything it needs to know."}},"required":["input"],"additionalProperties":false}`
