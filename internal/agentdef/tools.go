package agentdef

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// Builder makes a tool on the runtime's artifact store.
type Builder func(arts artifact.Store) tool.Tool

var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckName checks a tool or agent name: what every provider accepts.
func CheckName(kind, name string) error {
	if !toolName.MatchString(name) {
		return fmt.Errorf("%s name %q: want 1 to 64 of A-Z a-z 0-9 _ -", kind, name)
	}
	return nil
}

// Func is a tool that runs fn (mode safe_readonly or confirm_once).
func Func[A, R any](name, description string, mode run.Mode, fn func(context.Context, A) (R, error)) (Builder, error) {
	if err := CheckName("tool", name); err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, fmt.Errorf("tool %q: function is nil", name)
	}
	schema, err := SchemaFor[A]()
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", name, err)
	}
	info := tool.Info{Name: name, Description: description, Schema: schema, Mode: mode}
	return func(arts artifact.Store) tool.Tool { return funcTool[A, R]{info: info, fn: fn, arts: arts} }, nil
}

type funcTool[A, R any] struct {
	info tool.Info
	fn   func(context.Context, A) (R, error)
	arts artifact.Store
}

func (t funcTool[A, R]) Info() tool.Info { return t.info }

func (t funcTool[A, R]) Run(ctx context.Context, c tool.Call) (tool.Result, error) {
	var args A
	if err := json.Unmarshal(c.Args, &args); err != nil {
		return tool.Result{}, fmt.Errorf("arguments: %w", err)
	}
	ctx = WithCall(ctx, Call{RunID: c.RunID, CallID: c.PlanItemID, CheckpointID: c.CheckpointID, Progress: c.Progress, Artifacts: t.arts})
	out, err := t.fn(ctx, args)
	if err != nil {
		return tool.Result{}, err
	}
	return result(out)
}

// result gives a string to the model as it is, anything else as JSON.
func result(v any) (tool.Result, error) {
	if s, ok := v.(string); ok {
		return tool.Result{Content: s}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return tool.Result{}, fmt.Errorf("result is not JSON: %w", err)
	}
	return tool.Result{Content: string(b), Data: b}, nil
}

// EffectFuncs are an effect's functions and promises (see keel.EffectSpec).
type EffectFuncs[A any] struct {
	Dispatch    func(ctx context.Context, operationID string, args A) (ops.Outcome, error)
	Lookup      func(ctx context.Context, operationID string) (ops.Outcome, bool, error)
	Contract    ops.Contract
	Destination string
	ConfirmOnce bool
	Prepare     func(ctx context.Context, args A) (string, error)
	// Count, for crashtest only: how many times the destination applied
	// an operation id.
	Count func(ctx context.Context, operationID string) (int, error)
}

func (s EffectFuncs[A]) check() error {
	switch {
	case s.Dispatch == nil:
		return errors.New("no Dispatch: an effect needs one")
	case s.Contract.Lookup && s.Lookup == nil:
		return errors.New("promises include LookupByKey but Lookup is nil")
	case !s.Contract.Lookup && s.Lookup != nil:
		return errors.New("a Lookup is set but the promises lack LookupByKey: declare it, or drop Lookup")
	}
	return nil
}

// Effect is an effectful tool under the operation protocol.
func Effect[A any](name, description string, f EffectFuncs[A]) (Builder, error) {
	if err := CheckName("tool", name); err != nil {
		return nil, err
	}
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("effect %q: %w", name, err)
	}
	schema, err := SchemaFor[A]()
	if err != nil {
		return nil, fmt.Errorf("effect %q: %w", name, err)
	}
	mode := run.ModeMutating
	if f.ConfirmOnce {
		mode = run.ModeConfirmOnce
	}
	if f.Destination == "" {
		f.Destination = name
	}
	info := tool.Info{Name: name, Description: description, Schema: schema, Mode: mode}
	return func(arts artifact.Store) tool.Tool { return effectTool[A]{info: info, f: f, arts: arts} }, nil
}

type effectTool[A any] struct {
	info tool.Info
	f    EffectFuncs[A]
	arts artifact.Store
}

var _ tool.Effectful = effectTool[struct{}]{}

func (e effectTool[A]) Info() tool.Info { return e.info }

// Run is never called for an effect: the harness dispatches it.
func (e effectTool[A]) Run(context.Context, tool.Call) (tool.Result, error) {
	return tool.Result{}, fmt.Errorf("%s runs through the operation protocol", e.info.Name)
}

func (e effectTool[A]) Name() string { return e.f.Destination }

func (e effectTool[A]) Contract() ops.Contract { return e.f.Contract }

func (e effectTool[A]) Intent(ctx context.Context, c tool.Call) (tool.Intent, error) {
	if e.f.Prepare == nil {
		return tool.Intent{}, nil
	}
	var a A
	if err := json.Unmarshal(c.Args, &a); err != nil {
		return tool.Intent{}, err
	}
	ctx = WithCall(ctx, Call{RunID: c.RunID, CallID: c.PlanItemID, CheckpointID: c.CheckpointID, Artifacts: e.arts})
	hash, err := e.f.Prepare(ctx, a)
	return tool.Intent{ArtifactHash: hash}, err
}

func (e effectTool[A]) opCtx(ctx context.Context, op run.Operation) context.Context {
	return WithCall(ctx, Call{RunID: op.RunID, CallID: op.PlanItemID, OperationID: op.ID, Artifacts: e.arts})
}

func (e effectTool[A]) Dispatch(ctx context.Context, op run.Operation) (ops.Outcome, error) {
	var a A
	if err := json.Unmarshal(op.Args, &a); err != nil {
		// The recorded arguments do not decode: nothing was sent.
		return ops.Outcome{}, &ops.Rejected{Reason: "arguments: " + err.Error()}
	}
	return e.f.Dispatch(e.opCtx(ctx, op), op.IdempotencyKey, a)
}

func (e effectTool[A]) Lookup(ctx context.Context, op run.Operation) (ops.Outcome, bool, error) {
	if e.f.Lookup == nil {
		return ops.Outcome{}, false, errors.New("no lookup")
	}
	return e.f.Lookup(e.opCtx(ctx, op), op.IdempotencyKey)
}

func (e effectTool[A]) Describe(op run.Operation) tool.Result {
	m := map[string]any{"done": true, "operation_id": op.ID, "external_id": op.ExternalID}
	if len(op.Result) > 0 && json.Valid(op.Result) {
		m["result"] = op.Result
	}
	b, _ := json.Marshal(m)
	return tool.Result{Content: string(b), Data: b}
}

// Observation is what an effect's own code says of one operation at its
// destination, for `keel crashtest`: the count hook's answer where the
// effect has one, else its Lookup's (found: 1, not found: 0), else nothing.
type Observation struct {
	// By is "count", "lookup" or "" (the destination cannot be observed).
	By         string `json:"by,omitempty"`
	Count      int    `json:"count"`
	ExternalID string `json:"external_id,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Observe asks the destination about op with the effect's Count hook, or
// its Lookup. It never dispatches.
func (e effectTool[A]) Observe(ctx context.Context, op run.Operation) Observation {
	ctx = e.opCtx(ctx, op)
	var o Observation
	if e.f.Lookup != nil {
		o.By = "lookup"
		out, found, err := e.f.Lookup(ctx, op.IdempotencyKey)
		if err != nil {
			o.Error = err.Error()
		}
		if found {
			o.Count, o.ExternalID = 1, out.ExternalID
		}
	}
	if e.f.Count != nil {
		o.By = "count"
		n, err := e.f.Count(ctx, op.IdempotencyKey)
		o.Error = "" // the count answers for the lookup: its error, if any, is the one that stands
		if err != nil {
			o.Error = err.Error()
		}
		o.Count = n
	}
	return o
}
