// Package mcpserve is Keel as an MCP server (`prog mcp`): an MCP client —
// Claude Code, an IDE, another agent — starts runs, follows them, reads
// their story and sends them input, through Keel's HTTP API with the
// caller's own API credentials (the same as every client command).
//
// Deciding an approval or settling an operation is off unless the
// operator turns it on (Options.AllowDecisions): the MCP client may be a
// model, and an approval is where a person vouches for an action. Off,
// those tools are not offered at all.
package mcpserve

import (
	"context"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/observe/explain"
)

// Every tool answers JSON (structured content, and the same as text);
// none declares an output schema, as the API's records carry free-form
// JSON (arguments, event data) that a schema inferred from Go types would
// misdescribe.

// Keel is the part of the API client the server uses
// (*client.Client).
type Keel interface {
	CreateRun(ctx context.Context, req api.CreateRunRequest, key string) (api.Run, bool, error)
	GetRun(ctx context.Context, id string) (api.Run, error)
	ListApprovals(ctx context.Context, id string) ([]api.Approval, error)
	Events(ctx context.Context, id string, after int64, limit int) (api.EventPage, error)
	Explain(ctx context.Context, id string) (explain.Story, error)
	Input(ctx context.Context, id, text string) (api.InputResponse, error)
	Decide(ctx context.Context, runID, approvalID string, d api.DecisionRequest) (api.Approval, error)
	Settle(ctx context.Context, runID, opID string, req api.SettleRequest) (api.Run, error)
}

// Options configure the server.
type Options struct {
	// AllowDecisions offers approve, deny and settle. Off by default.
	AllowDecisions bool
	// Version is reported to clients.
	Version string
}

// MaxEvents bounds one run_events answer.
const MaxEvents = 200

// New returns the MCP server over k.
func New(k Keel, o Options) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "keel", Version: o.Version}, &mcp.ServerOptions{
		Instructions: "Keel runs durable AI agents. start_run starts one; get_run and run_events follow it; " +
			"explain_run tells its story; send_input sends it more input.",
	})
	h := handlers{k: k}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(s, &mcp.Tool{Name: "start_run", Description: "Start a run of an agent with an input. " +
		"With idempotency_key, the same key returns the same run instead of starting another."}, h.startRun)
	mcp.AddTool(s, &mcp.Tool{Name: "get_run", Description: "A run's status, output or error, and its pending approvals.",
		Annotations: ro}, h.getRun)
	mcp.AddTool(s, &mcp.Tool{Name: "run_events", Description: "A run's event log after seq 'after' (0: from the start), " +
		"at most 200 events and 1 MiB of them; next_after continues it.", Annotations: ro}, h.events)
	mcp.AddTool(s, &mcp.Tool{Name: "explain_run", Description: "A run's story from its records: decisions, first error, " +
		"where tokens and time went, what is open, what to do next.", Annotations: ro}, h.explain)
	mcp.AddTool(s, &mcp.Tool{Name: "send_input", Description: "Send more input to a run; its input policy decides " +
		"whether it is queued, interrupts, or is refused."}, h.input)
	if o.AllowDecisions {
		mcp.AddTool(s, &mcp.Tool{Name: "decide_approval", Description: "Approve or deny a pending approval of a run. " +
			"args_hash must be the approval's, proving the exact action was seen."}, h.decide)
		mcp.AddTool(s, &mcp.Tool{Name: "settle_operation", Description: "Settle a run's operation whose outcome Keel " +
			"could not know (needs_human): happened, not_happened or give_up, with the reason established."}, h.settle)
	}
	return s
}

type handlers struct{ k Keel }

// StartRunArgs are start_run's arguments.
type StartRunArgs struct {
	Agent          string `json:"agent" jsonschema:"the agent's name"`
	Input          string `json:"input" jsonschema:"the task"`
	SessionID      string `json:"session_id,omitempty" jsonschema:"a session to continue"`
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"the same key returns the same run"`
}

// RunRef names a run.
type RunRef struct {
	RunID string `json:"run_id"`
}

// RunView is what get_run and start_run answer.
type RunView struct {
	RunID     string         `json:"run_id"`
	Agent     string         `json:"agent"`
	Status    string         `json:"status"`
	Output    string         `json:"output,omitempty"`
	Error     string         `json:"error,omitempty"`
	Created   bool           `json:"created,omitempty"`
	Approvals []api.Approval `json:"pending_approvals,omitempty"`
}

func view(r api.Run) RunView {
	return RunView{RunID: r.RunID, Agent: r.Agent, Status: string(r.Status), Output: r.Output, Error: r.Error}
}

func (h handlers) startRun(ctx context.Context, _ *mcp.CallToolRequest, a StartRunArgs) (*mcp.CallToolResult, any, error) {
	if a.Agent == "" || a.Input == "" {
		return nil, nil, errors.New("agent and input are required")
	}
	r, created, err := h.k.CreateRun(ctx, api.CreateRunRequest{Agent: a.Agent, Input: a.Input, SessionID: a.SessionID}, a.IdempotencyKey)
	if err != nil {
		return nil, nil, err
	}
	v := view(r)
	v.Created = created
	return nil, v, nil
}

func (h handlers) getRun(ctx context.Context, _ *mcp.CallToolRequest, a RunRef) (*mcp.CallToolResult, any, error) {
	r, err := h.k.GetRun(ctx, a.RunID)
	if err != nil {
		return nil, nil, err
	}
	v := view(r)
	aps, err := h.k.ListApprovals(ctx, a.RunID)
	if err != nil {
		return nil, nil, err
	}
	for _, ap := range aps {
		if ap.Status == "pending" {
			v.Approvals = append(v.Approvals, ap)
		}
	}
	return nil, v, nil
}

// EventsArgs are run_events' arguments.
type EventsArgs struct {
	RunID string `json:"run_id"`
	After int64  `json:"after,omitempty" jsonschema:"the last seq already read"`
}

func (h handlers) events(ctx context.Context, _ *mcp.CallToolRequest, a EventsArgs) (*mcp.CallToolResult, any, error) {
	p, err := eventPage(ctx, h.k, a.RunID, a.After)
	if err != nil {
		return nil, nil, err
	}
	return nil, p, nil
}

// Story is explain_run's answer.
type Story struct {
	Text string `json:"text"`
}

func (h handlers) explain(ctx context.Context, _ *mcp.CallToolRequest, a RunRef) (*mcp.CallToolResult, any, error) {
	st, err := h.k.Explain(ctx, a.RunID)
	if err != nil {
		return nil, nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: st.Text}}}, Story{Text: st.Text}, nil
}

// InputArgs are send_input's arguments.
type InputArgs struct {
	RunID string `json:"run_id"`
	Text  string `json:"text"`
}

func (h handlers) input(ctx context.Context, _ *mcp.CallToolRequest, a InputArgs) (*mcp.CallToolResult, any, error) {
	r, err := h.k.Input(ctx, a.RunID, a.Text)
	return nil, r, err
}

// DecideArgs are decide_approval's arguments.
type DecideArgs struct {
	RunID      string `json:"run_id"`
	ApprovalID string `json:"approval_id"`
	Decision   string `json:"decision" jsonschema:"approve or deny"`
	ArgsHash   string `json:"args_hash" jsonschema:"the approval's args_hash"`
	Reason     string `json:"reason,omitempty"`
}

func (h handlers) decide(ctx context.Context, _ *mcp.CallToolRequest, a DecideArgs) (*mcp.CallToolResult, any, error) {
	ap, err := h.k.Decide(ctx, a.RunID, a.ApprovalID, api.DecisionRequest{Decision: a.Decision, ArgsHash: a.ArgsHash, Reason: "via MCP: " + a.Reason})
	return nil, ap, err
}

// SettleArgs are settle_operation's arguments.
type SettleArgs struct {
	RunID       string `json:"run_id"`
	OperationID string `json:"operation_id"`
	Outcome     string `json:"outcome" jsonschema:"happened, not_happened or give_up"`
	Reason      string `json:"reason" jsonschema:"what was established, or why nobody can"`
	ExternalID  string `json:"external_id,omitempty"`
}

func (h handlers) settle(ctx context.Context, _ *mcp.CallToolRequest, a SettleArgs) (*mcp.CallToolResult, any, error) {
	if strings.TrimSpace(a.Reason) == "" {
		// The API requires a reason; "via MCP: " alone must not pass for one.
		return nil, nil, errors.New("reason is required: what was established about the operation, or why nobody can establish it")
	}
	r, err := h.k.Settle(ctx, a.RunID, a.OperationID, api.SettleRequest{Outcome: a.Outcome, Reason: "via MCP: " + a.Reason, ExternalID: a.ExternalID})
	if err != nil {
		return nil, nil, err
	}
	return nil, view(r), nil
}
