package harnesstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// ReportAgentName names the report agent, for CreateRun.
const ReportAgentName = "report"

// ReportScript is the report agent's run: gather (read-only; reports
// progress), draft (saves the report as an artifact), publish (the effect,
// on the artifact's key and hash), then the final answer. Three tool
// calls, four model calls; publish waits for a person.
const ReportScript = `{"turns":[
 {"text":"Gathering the notes.","tool_calls":[{"name":"gather","args":{"topic":"durable agents"}}]},
 {"text":"Drafting the report.","tool_calls":[{"name":"draft","args":{"title":"Durable agents: what must survive a restart"}}]},
 {"text":"Publishing the approved report.","tool_calls":[{"name":"publish","args":{"artifact_key":"{{draft.artifact_key}}","sha256":"{{draft.sha256}}"}}]}],
 "final":"The report is drafted and published."}`

// reportNotes are what gather finds, one progress step each.
var reportNotes = []string{"durable state first", "no duplicate side effects", "nothing hidden from the operator"}

// ReportAgent is the report agent (ReportScript) on e's artifact store,
// publishing to to.
func (e *Env) ReportAgent(to *Ledger) harness.AgentMap {
	e.T.Helper()
	return e.Agent(ReportAgentName, ReportScript, readOnly{"gather", gather}, readOnly{"draft", e.draft}, Publish{Arts: e.Arts, To: to})
}

// readOnly is a safe_readonly tool whose body is run.
type readOnly struct {
	name string
	run  func(context.Context, tool.Call) (tool.Result, error)
}

func (r readOnly) Info() tool.Info {
	return tool.Info{Name: r.name, Mode: run.ModeSafeReadonly, Description: r.name, Schema: json.RawMessage(`{"type":"object"}`)}
}

func (r readOnly) Run(ctx context.Context, c tool.Call) (tool.Result, error) { return r.run(ctx, c) }

func jsonResult(v any) (tool.Result, error) {
	b, err := json.Marshal(v)
	return tool.Result{Content: string(b), Data: b}, err
}

// gather finds reportNotes and reports each as a step of progress.
func gather(_ context.Context, c tool.Call) (tool.Result, error) {
	for i, n := range reportNotes {
		if c.Progress != nil {
			c.Progress(int64(i+1), int64(len(reportNotes)), n)
		}
	}
	return jsonResult(map[string]any{"notes": reportNotes})
}

// draft saves the report as report.md under the call's checkpoint and
// answers its key and hash. Saving the same content again is a no-op of
// the artifact store, so draft is read-only for the harness.
func (e *Env) draft(ctx context.Context, c tool.Call) (tool.Result, error) {
	var a struct{ Title string }
	if err := json.Unmarshal(c.Args, &a); err != nil || a.Title == "" {
		return tool.Result{}, errors.New("draft needs a title")
	}
	body := "# " + a.Title + "\n\n- " + strings.Join(reportNotes, "\n- ") + "\n"
	cp := c.CheckpointID
	if cp == "" {
		cp = "start" // a run's first call comes before its first checkpoint
	}
	info, err := e.Arts.Put(ctx, artifact.Key{RunID: c.RunID, CheckpointID: cp, Name: "report.md"}, []byte(body))
	if err != nil {
		return tool.Result{}, fmt.Errorf("save the report: %w", err)
	}
	return jsonResult(map[string]any{"artifact_key": info.Key.Path(), "sha256": info.SHA256, "bytes": info.Size})
}

var _ tool.Effectful = Publish{}

// Publish is the effectful tool "publish" (mutating): it records the
// artifact its arguments name in To. Its intent, and again its dispatch,
// read the artifact back and check it has the argued hash, so that what
// is published is exactly what a person approved.
type Publish struct {
	Arts artifact.Store
	To   *Ledger
}

// publishArgs are publish's arguments.
type publishArgs struct {
	ArtifactKey string `json:"artifact_key"`
	SHA256      string `json:"sha256"`
}

// Info describes the tool.
func (p Publish) Info() tool.Info {
	return tool.Info{Name: "publish", Mode: run.ModeMutating, Description: "publish a drafted report",
		Schema: json.RawMessage(`{"type":"object","properties":{"artifact_key":{"type":"string","minLength":1},"sha256":{"type":"string","pattern":"^[0-9a-f]{64}$"}},"required":["artifact_key","sha256"]}`)}
}

// Run is never called for an effect; it fails to show it.
func (p Publish) Run(context.Context, tool.Call) (tool.Result, error) {
	return tool.Result{}, errors.New("publish is an effect: the harness dispatches it")
}

// Name is the Ledger's.
func (p Publish) Name() string { return p.To.Name() }

// Contract is the Ledger's.
func (p Publish) Contract() ops.Contract { return p.To.Contract() }

// report reads the artifact args name, checked against their hash.
func (p Publish) report(ctx context.Context, args json.RawMessage) ([]byte, publishArgs, error) {
	var a publishArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, a, err
	}
	k, err := artifact.ParsePath(a.ArtifactKey)
	if err != nil {
		return nil, a, err
	}
	b, info, err := p.Arts.Get(ctx, k)
	if err != nil {
		return nil, a, fmt.Errorf("read the report: %w", err)
	}
	if info.SHA256 != a.SHA256 {
		return nil, a, fmt.Errorf("report %s has sha256 %s, not the approved %s", a.ArtifactKey, info.SHA256, a.SHA256)
	}
	return b, a, nil
}

// Intent names the report's hash, once checked.
func (p Publish) Intent(ctx context.Context, c tool.Call) (tool.Intent, error) {
	_, a, err := p.report(ctx, c.Args)
	return tool.Intent{ArtifactHash: a.SHA256}, err
}

// Dispatch records the report under the operation's idempotency key; a
// report that no longer has its hash is refused, not sent.
func (p Publish) Dispatch(ctx context.Context, op run.Operation) (ops.Outcome, error) {
	b, _, err := p.report(ctx, op.Args)
	if err != nil {
		return ops.Outcome{}, &ops.Rejected{Reason: err.Error()}
	}
	return p.To.Record(ctx, op.IdempotencyKey, b)
}

// Lookup asks the Ledger for the operation's idempotency key.
func (p Publish) Lookup(ctx context.Context, op run.Operation) (ops.Outcome, bool, error) {
	return p.To.Find(ctx, op.IdempotencyKey)
}

// Describe tells the model where the report went.
func (p Publish) Describe(op run.Operation) tool.Result {
	return tool.Result{Content: "published " + op.ExternalID}
}
