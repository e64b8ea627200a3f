package agentver_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// fakeTool is a tool with a given schema, mode and (for an effect)
// contract: Describe reads only Info, Name and Contract.
type fakeTool struct {
	info     tool.Info
	contract ops.Contract
}

func (f fakeTool) Info() tool.Info                                     { return f.info }
func (f fakeTool) Run(context.Context, tool.Call) (tool.Result, error) { return tool.Result{}, nil }

type fakeEffect struct{ fakeTool }

func (f fakeEffect) Name() string           { return "dest" }
func (f fakeEffect) Contract() ops.Contract { return f.contract }
func (f fakeEffect) Dispatch(context.Context, run.Operation) (ops.Outcome, error) {
	return ops.Outcome{}, nil
}
func (f fakeEffect) Lookup(context.Context, run.Operation) (ops.Outcome, bool, error) {
	return ops.Outcome{}, false, nil
}
func (f fakeEffect) Intent(context.Context, tool.Call) (tool.Intent, error) {
	return tool.Intent{}, nil
}
func (f fakeEffect) Describe(run.Operation) tool.Result { return tool.Result{} }

const (
	titleSchema    = `{"type":"object","properties":{"title":{"type":"string"},"body":{"type":"string"}},"required":["title","body"],"additionalProperties":false}`
	headlineSchema = `{"type":"object","properties":{"headline":{"type":"string"},"body":{"type":"string"}},"required":["headline","body"],"additionalProperties":false}`
	looserSchema   = `{"type":"object","properties":{"title":{"type":"string"},"body":{"type":"string"},"tags":{"type":"array"}},"required":["title"],"additionalProperties":false}`
)

func publish(schema string, mode run.Mode, c ops.Contract) tool.Tool {
	return fakeEffect{fakeTool{info: tool.Info{Name: "publish", Schema: json.RawMessage(schema), Mode: mode}, contract: c}}
}

func search() tool.Tool {
	return fakeTool{info: tool.Info{Name: "search", Schema: json.RawMessage(`{"type":"object"}`), Mode: run.ModeSafeReadonly}}
}

func def(t *testing.T, instructions string, tools ...tool.Tool) agentver.Definition {
	t.Helper()
	d, err := agentver.Describe(agentver.Facts{Agent: "a", Instructions: instructions, Model: "scripted:x", Build: "test"}, tools)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// validator validates against d's schemas the way the registry does.
func validator(t *testing.T, d agentver.Definition, tools ...tool.Tool) agentver.Validator {
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	return func(name string, args json.RawMessage) error { _, err := reg.Validate(name, args); return err }
}

func TestVersionIsStable(t *testing.T) {
	a := def(t, "i", publish(titleSchema, run.ModeMutating, ops.Contract{Lookup: true}), search())
	// Tool order and schema whitespace are not changes.
	b := def(t, "i", search(), publish(strings.ReplaceAll(titleSchema, ",", ", "), run.ModeMutating, ops.Contract{Lookup: true}))
	if a.Version != b.Version || len(a.Version) != 64 {
		t.Fatalf("versions %s and %s: want one sha256", a.Version, b.Version)
	}
	for name, other := range map[string]agentver.Definition{
		"instructions": def(t, "j", publish(titleSchema, run.ModeMutating, ops.Contract{Lookup: true}), search()),
		"schema":       def(t, "i", publish(headlineSchema, run.ModeMutating, ops.Contract{Lookup: true}), search()),
		"mode":         def(t, "i", publish(titleSchema, run.ModeConfirmOnce, ops.Contract{Lookup: true}), search()),
		"contract":     def(t, "i", publish(titleSchema, run.ModeMutating, ops.Contract{Idempotent: true}), search()),
		"tools":        def(t, "i", publish(titleSchema, run.ModeMutating, ops.Contract{Lookup: true})),
	} {
		if other.Version == a.Version {
			t.Errorf("a change of %s kept the version", name)
		}
	}
}

func TestCheck(t *testing.T) {
	lookup := ops.Contract{Lookup: true}
	v1Tools := []tool.Tool{publish(titleSchema, run.ModeMutating, lookup), search()}
	v1 := def(t, "i", v1Tools...)
	args := json.RawMessage(`{"title":"Q3","body":"ok"}`)
	approval := agentver.Open{Approvals: []run.Approval{{ID: "ap1", Tool: "publish", Args: args}}}
	call := agentver.Open{Calls: []agentver.Call{{Tool: "publish", Args: args}}}
	pendingOp := agentver.Open{Operations: []run.Operation{{ID: "op1", Tool: "publish", Args: args}}}
	grant := agentver.Open{Grants: []string{"publish"}}
	cases := []struct {
		name    string
		tools   []tool.Tool
		instr   string
		open    agentver.Open
		action  agentver.Action
		mention string
	}{
		{"same version", v1Tools, "i", approval, agentver.Continue, "same version"},
		{"instructions, approval", v1Tools, "j", approval, agentver.Move, "instructions changed"},
		{"new tool", append([]tool.Tool{fakeTool{info: tool.Info{Name: "note", Schema: json.RawMessage(`{}`), Mode: run.ModeSafeReadonly}}}, v1Tools...), "i", approval, agentver.Move, "tool note added"},
		{"renamed field, approval", []tool.Tool{publish(headlineSchema, run.ModeMutating, lookup), search()}, "i", approval, agentver.Stop, "-title +headline"},
		{"renamed field, open call", []tool.Tool{publish(headlineSchema, run.ModeMutating, lookup), search()}, "i", call, agentver.Stop, "do not validate"},
		{"looser schema, open call", []tool.Tool{publish(looserSchema, run.ModeMutating, lookup), search()}, "i", call, agentver.Move, "schema changed"},
		{"looser schema, approval", []tool.Tool{publish(looserSchema, run.ModeMutating, lookup), search()}, "i", approval, agentver.Stop, "argument schema changed"},
		{"tool removed, approval", []tool.Tool{search()}, "i", approval, agentver.Stop, "the tool is gone"},
		{"tool removed, no dependency", []tool.Tool{search()}, "i", agentver.Open{}, agentver.Move, "tool publish removed"},
		{"mode changed, call", []tool.Tool{publish(titleSchema, run.ModeConfirmOnce, lookup), search()}, "i", call, agentver.Stop, "mode changed"},
		{"contract changed, approval", []tool.Tool{publish(titleSchema, run.ModeMutating, ops.Contract{}), search()}, "i", approval, agentver.Stop, "contract changed"},
		{"pending op, promise dropped", []tool.Tool{publish(titleSchema, run.ModeMutating, ops.Contract{}), search()}, "i", pendingOp, agentver.Stop, "dropped a promise"},
		{"pending op, promise added", []tool.Tool{publish(titleSchema, run.ModeMutating, ops.Contract{Lookup: true, Idempotent: true}), search()}, "i", pendingOp, agentver.Move, "reconciled under"},
		{"grant, contract changed", []tool.Tool{publish(titleSchema, run.ModeMutating, ops.Contract{Idempotent: true}), search()}, "i", grant, agentver.Stop, "confirm-once grant of publish"},
		{"grant, instructions only", v1Tools, "j", grant, agentver.Move, "instructions changed"},
		{"grant, tool removed", []tool.Tool{search()}, "i", grant, agentver.Move, "tool publish removed"},
		{"pending op, schema changed", []tool.Tool{publish(looserSchema, run.ModeMutating, lookup), search()}, "i", pendingOp, agentver.Stop, "argument schema changed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v2 := def(t, tc.instr, tc.tools...)
			got := agentver.Check(v1, v2, tc.open, validator(t, v2, tc.tools...))
			if got.Action != tc.action || !strings.Contains(got.Reason(), tc.mention) {
				t.Fatalf("Check = %s (%s), want %s mentioning %q", got.Action, got.Reason(), tc.action, tc.mention)
			}
		})
	}
}

func TestSaveLoad(t *testing.T) {
	ctx := context.Background()
	arts, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d := def(t, "i", search())
	for range 2 { // idempotent
		if err := agentver.Save(ctx, arts, d); err != nil {
			t.Fatal(err)
		}
	}
	got, err := agentver.Load(ctx, arts, "a", d.Version)
	if err != nil || got.Version != d.Version || len(got.Tools) != 1 {
		t.Fatalf("Load = %+v, %v", got, err)
	}
	if _, err := agentver.Load(ctx, arts, "a", strings.Repeat("0", 64)); !errors.Is(err, agentver.ErrUnknown) {
		t.Fatalf("Load of an unknown version: %v, want ErrUnknown", err)
	}
}

// TestJSONRoundTrip: GET /v1/runs/{id}/version serves a Definition and an
// Open as JSON, and upgrade-check --api decides on what it decodes, so
// every field the check reads must come back as it went.
func TestJSONRoundTrip(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	open := agentver.Open{
		Operations: []run.Operation{{ID: "op_1", RunID: "run_1", PlanItemID: "pi_1", Tool: "publish", Destination: "dest",
			Args: json.RawMessage(`{"title":"t"}`), ArgsHash: "h", IdempotencyKey: "k", Status: run.OpPending, Attempts: 2, CreatedAt: at, UpdatedAt: at}},
		Approvals: []run.Approval{{ID: "apr_1", RunID: "run_1", SessionID: "ses_1", PlanItemID: "pi_2", Tool: "publish", Mode: run.ModeMutating,
			Args: json.RawMessage(`{"title":"u"}`), ArgsHash: "h2", Status: run.ApprovalApproved, DecidedBy: "alice", CreatedAt: at, DecidedAt: at}},
		Calls:  []agentver.Call{{Tool: "search", Args: json.RawMessage(`{"q":"x"}`)}},
		Grants: []string{"post"},
		Inputs: 3,
	}
	var gotOpen agentver.Open
	roundTrip(t, open, &gotOpen)
	if !reflect.DeepEqual(gotOpen, open) {
		t.Fatalf("Open after JSON:\n%+v\nwant\n%+v", gotOpen, open)
	}
	d := def(t, "i", search())
	d.Limits, d.Timeout, d.InputPolicy, d.MaxOutputTokens, d.ContextTokens = run.Limits{MaxSteps: 3, Deadline: at}, "1h0m0s", "queue", 9, 10
	var gotDef agentver.Definition
	roundTrip(t, d, &gotDef)
	if !reflect.DeepEqual(gotDef, d) {
		t.Fatalf("Definition after JSON:\n%+v\nwant\n%+v", gotDef, d)
	}
}

func roundTrip(t *testing.T, v, out any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
}
