package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keelrun/keel/internal/agentdef"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// Open connects to s, lists its tools and makes each a Keel tool on arts
// under the mode rule (see the package doc). The connection is kept for
// the tools' calls and made again after it breaks. A server that cannot
// be reached, lists too many tools, or names a tool in Only or Tools
// that it does not list is an error naming it.
func Open(ctx context.Context, s Server, arts artifact.Store) ([]tool.Tool, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	c := newClient(s)
	listed, err := c.list(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]*mcp.Tool{}
	for _, t := range listed {
		byName[t.Name] = t
	}
	for _, n := range append(slices.Clone(s.Only), keys(s.Tools)...) {
		if byName[n] == nil {
			return nil, fmt.Errorf("MCP server %q lists no tool %q (named in Only or Tools)", s.Name, n)
		}
	}
	var out []tool.Tool
	for _, t := range listed {
		if len(s.Only) > 0 && !slices.Contains(s.Only, t.Name) {
			continue
		}
		kt, err := newTool(c, t, arts)
		if err != nil {
			return nil, err
		}
		out = append(out, kt)
	}
	return out, nil
}

func keys(m map[string]Override) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

var unsafeChar = regexp.MustCompile(`[^A-Za-z0-9_-]`)

func newTool(c *client, t *mcp.Tool, arts artifact.Store) (tool.Tool, error) {
	prefix := c.srv.Prefix
	if prefix == "" {
		prefix = c.srv.Name + "_"
	}
	name := prefix + unsafeChar.ReplaceAllString(t.Name, "_")
	if err := agentdef.CheckName("tool", name); err != nil {
		return nil, fmt.Errorf("MCP server %q: tool %q: %w (leave it out with Only)", c.srv.Name, t.Name, err)
	}
	schema, err := json.Marshal(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: tool %q: input schema: %w", c.srv.Name, t.Name, err)
	}
	b := base{c: c, mcpName: t.Name, arts: arts, info: tool.Info{Name: name, Description: t.Description, Schema: schema}}
	return b.as(c.srv.judge(t.Name, t.Annotations)), nil
}

// as is the tool under terms: an effect or a read, of terms' mode.
func (b base) as(t Terms) tool.Tool {
	b.terms, b.info.Mode = t, t.Mode
	if t.Effect {
		return effectTool{b}
	}
	return readTool{b}
}

// Judge is the tool as the terms runID holds make it (tool.Judged): the
// server's list as the run recorded it, or, at the run's first use of
// the server, as it is listed now, recorded then for the run. So a
// server that changes a tool's annotations while the worker lives is
// judged again for every new run, under the operator's policy, and a
// run keeps the judgement of its own terms (a call under other terms
// refuses: holdTerms). A tool whose mode the operator set is not judged.
func (b base) Judge(ctx context.Context, runID string) (tool.Tool, error) {
	if b.c.srv.Tools[b.mcpName].Mode != "" {
		return b.as(b.terms), nil
	}
	rec, err := b.c.forRun(ctx, runID).runRecord(ctx, b.arts, runID, nil)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(rec.Tools, func(x listed) bool { return x.Name == b.mcpName })
	if i < 0 {
		return nil, fmt.Errorf("%w: MCP server %q does not list tool %q for this run", ErrTermsChanged, b.c.srv.Name, b.mcpName)
	}
	return b.as(b.c.srv.judge(b.mcpName, rec.Tools[i].Annotations)), nil
}

// base is what the read and the effect adapters share.
type base struct {
	c       *client
	mcpName string
	info    tool.Info
	terms   Terms
	arts    artifact.Store
}

func (b base) Info() tool.Info { return b.info }

// Secrets are the client's credentials, for the harness to mask.
func (b base) Secrets() []string {
	out := []string{}
	if b.c.srv.BearerToken != "" {
		out = append(out, b.c.srv.BearerToken)
	}
	for _, v := range b.c.srv.Headers {
		out = append(out, v)
	}
	if b.c.srv.OAuthClientSecret != "" {
		out = append(out, b.c.srv.OAuthClientSecret)
	}
	return append(out, b.c.accessTokens()...)
}

// answer is one call's result as Keel takes it.
type answer struct {
	content string
	data    json.RawMessage
	isError bool
	size    int
}

func (b base) invoke(ctx context.Context, runID string, args json.RawMessage, meta map[string]any, progress func(int64, int64, string)) (answer, error) {
	res, err := b.c.forRun(ctx, runID).call(ctx, b.mcpName, args, meta, progress)
	if err != nil {
		return answer{}, err
	}
	var a answer
	var sb strings.Builder
	for _, ct := range res.Content {
		switch v := ct.(type) {
		case *mcp.TextContent:
			sb.WriteString(v.Text)
		default:
			fmt.Fprintf(&sb, "[%T content]", ct)
		}
	}
	a.content, a.isError = sb.String(), res.IsError
	if res.StructuredContent != nil {
		if a.data, err = json.Marshal(res.StructuredContent); err != nil {
			return answer{}, fmt.Errorf("MCP server %q: %s: structured result: %w", b.c.srv.Name, b.mcpName, err)
		}
	}
	a.size = len(a.content) + len(a.data)
	return a, nil
}

func (b base) maxResult() int {
	if b.c.srv.MaxResultBytes > 0 {
		return b.c.srv.MaxResultBytes
	}
	return DefaultMaxResultBytes
}

func callMeta(runID, callID string) map[string]any {
	return map[string]any{MetaRunID: runID, MetaCallID: callID}
}

// readTool is a tool without effects (safe_readonly or confirm_once): it
// may be called again after a crash.
type readTool struct{ base }

var (
	_ tool.Tool         = readTool{}
	_ tool.SecretHolder = readTool{}
	_ tool.Effectful    = effectTool{}
	_ tool.SecretHolder = effectTool{}
	_ tool.Judged       = readTool{}
	_ tool.Judged       = effectTool{}
)

func (r readTool) Run(ctx context.Context, c tool.Call) (tool.Result, error) {
	if err := r.c.forRun(ctx, c.RunID).holdTerms(ctx, r.arts, c.RunID, r.mcpName); err != nil {
		return tool.Result{}, err
	}
	a, err := r.invoke(ctx, c.RunID, c.Args, callMeta(c.RunID, c.PlanItemID), c.Progress)
	if err != nil {
		return tool.Result{}, err
	}
	if a.size > r.maxResult() {
		return tool.Result{}, fmt.Errorf("MCP server %q: %s answered %d bytes, over MaxResultBytes %d: dropped", r.c.srv.Name, r.mcpName, a.size, r.maxResult())
	}
	if a.isError {
		return tool.Result{}, fmt.Errorf("MCP server %q: %s failed: %s", r.c.srv.Name, r.mcpName, a.content)
	}
	return tool.Result{Content: a.content, Data: a.data}, nil
}

// effectTool is a tool whose call changes the world: it runs under the
// operation protocol, with the operation id in _meta.
type effectTool struct{ base }

// Run is never called for an effect: the harness dispatches it.
func (e effectTool) Run(context.Context, tool.Call) (tool.Result, error) {
	return tool.Result{}, fmt.Errorf("%s runs through the operation protocol", e.info.Name)
}

// Name is the destination in operation records.
func (e effectTool) Name() string { return "mcp:" + e.c.srv.Name + "/" + e.mcpName }

func (e effectTool) Contract() ops.Contract { return e.terms.Contract }

// Intent refuses, before anything is recorded, a tool whose terms
// changed since the run first listed the server.
func (e effectTool) Intent(ctx context.Context, c tool.Call) (tool.Intent, error) {
	return tool.Intent{}, e.c.forRun(ctx, c.RunID).holdTerms(ctx, e.arts, c.RunID, e.mcpName)
}

// Dispatch sends the call with the operation id in _meta. A server that
// answers isError or a JSON-RPC error refused the call (Rejected); a
// transport error, a timeout or a disconnect leaves the outcome unknown.
func (e effectTool) Dispatch(ctx context.Context, op run.Operation) (ops.Outcome, error) {
	if err := e.c.forRun(ctx, op.RunID).holdTerms(ctx, e.arts, op.RunID, e.mcpName); err != nil {
		if errors.Is(err, ErrTermsChanged) {
			return ops.Outcome{}, &ops.Rejected{Reason: err.Error()}
		}
		return ops.Outcome{}, err // not sent: unknown only in name; reconcile decides
	}
	meta := callMeta(op.RunID, op.PlanItemID)
	meta[MetaOperationID] = op.IdempotencyKey
	a, err := e.invoke(ctx, op.RunID, op.Args, meta, nil)
	var rpcErr *jsonrpc.Error
	switch {
	case errors.As(err, &rpcErr):
		return ops.Outcome{}, &ops.Rejected{Reason: err.Error()}
	case err != nil:
		return ops.Outcome{}, err
	case a.isError:
		return ops.Outcome{}, &ops.Rejected{Reason: fmt.Sprintf("MCP server %q: %s: %s", e.c.srv.Name, e.mcpName, a.content)}
	}
	out := ops.Outcome{Result: a.data}
	if a.data == nil {
		out.Result, _ = json.Marshal(map[string]string{"content": a.content})
	}
	if a.size > e.maxResult() {
		// The effect happened; only its answer is too large to keep.
		out.Result, _ = json.Marshal(map[string]any{"dropped": fmt.Sprintf("a result of %d bytes, over MaxResultBytes %d", a.size, e.maxResult())})
	}
	return out, nil
}

// Lookup is never called: an MCP server cannot be asked (Contract has no
// Lookup).
func (e effectTool) Lookup(context.Context, run.Operation) (ops.Outcome, bool, error) {
	return ops.Outcome{}, false, errors.New("an MCP server cannot be looked up")
}

func (e effectTool) Describe(op run.Operation) tool.Result {
	m := map[string]any{"done": true, "operation_id": op.ID}
	if len(op.Result) > 0 && json.Valid(op.Result) {
		m["result"] = op.Result
	}
	b, _ := json.Marshal(m)
	return tool.Result{Content: string(b), Data: b}
}

// Observe answers crashtest with the server's Count hook; it never calls
// the tool.
func (e effectTool) Observe(ctx context.Context, op run.Operation) agentdef.Observation {
	if e.c.srv.Count == nil {
		return agentdef.Observation{}
	}
	n, err := e.c.srv.Count(ctx, e.mcpName, op.IdempotencyKey)
	o := agentdef.Observation{By: "count", Count: n}
	if err != nil {
		o.Error = err.Error()
	}
	return o
}
