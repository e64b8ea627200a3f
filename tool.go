package keel

import (
	"context"
	"fmt"

	"github.com/keelrun/keel/internal/agentdef"
	"github.com/keelrun/keel/internal/kernel/run"
)

// Tool is something an agent's model may call. Make one with [ReadOnly],
// [ConfirmOnce] or [Effect]; the zero Tool is invalid.
//
// Every tool's arguments are a Go struct: its JSON Schema is derived from
// the struct (see [ReadOnly]), shown to the model, and every call's
// arguments are validated against it before the call is recorded, approved
// or run. A call that does not validate is answered to the model with the
// reason and never runs. Arguments are stored in the event log and hashed
// for approvals: never put a credential in them. A tool that needs one
// gets it from its constructor (a client built in main), not from the
// model.
type Tool struct {
	name    string
	long    bool
	price   int64         // micro-USD per call
	command bool          // a Command tool: needs a workspace with commands, no network
	sub     *subAgentSpec // a SubAgent: resolved against the program's agents by Main
	err     error
	build   agentdef.Builder
}

// Name is the tool's name as the model sees it.
func (t Tool) Name() string { return t.name }

// Long marks a tool whose calls may outlive a bounded step: on AWS, a run
// about to call it moves from the step Lambda (15 minutes at most) to its
// Fargate task first; under `keel dev`, to a child process. Operators can
// mark more tools with KEEL_SPILL_TOOLS.
func (t Tool) Long() Tool { t.long = true; return t }

// Priced gives each call of the tool a cost in millionths of a US dollar
// (a paid search, a metered API): it counts against the run's
// MaxSpendMicroUSD with the model's cost, and is reserved before the call,
// so that calls running at once never together pass the limit. A run the
// next call would take past it fails, or pauses to ask under
// [LimitPolicy]. A negative price is refused by [Main].
func (t Tool) Priced(microUSD int64) Tool {
	if microUSD < 0 && t.err == nil {
		t.err = fmt.Errorf("tool %q: Priced(%d): a price is never negative", t.name, microUSD)
	}
	t.price = microUSD
	return t
}

// ReadOnly is a tool without external effects: it runs as soon as the
// model calls it, possibly several calls at once, and may run again for the
// same call after a crash (a call whose result was not yet recorded is
// made again). Anything that changes the outside world is an [Effect].
//
// A is the arguments struct. Its JSON Schema is reflected by
// github.com/invopop/jsonschema: fields named by their `json` tags,
// required unless `json:",omitempty"`, no other properties allowed, and
// `jsonschema:"description=...,enum=a,enum=b,minimum=1,maxLength=200"` tags
// for the rest. run's result R is given to the model: a string as it is,
// anything else as JSON (and recorded as the call's data). An error is
// shown to the model as a failed call; the run goes on.
//
// The context carries the call: see [CurrentCall], [ReportProgress],
// [SaveArtifact] and [LoadArtifact]. It ends when the Step's time budget
// does or the run is cancelled.
func ReadOnly[A, R any](name, description string, run func(ctx context.Context, args A) (R, error)) Tool {
	return newTool(name)(agentdef.Func(name, description, modeReadOnly, run))
}

// ConfirmOnce is a tool that needs a person's approval the first time it
// is called in a session (the approval shows the exact arguments); once
// granted, later calls in the session run at once. Like a [ReadOnly] tool
// it may run again after a crash, so it must not change the outside world:
// use it for reads that a person should allow once, such as reading a
// customer's private data. Arguments and results are as for ReadOnly.
func ConfirmOnce[A, R any](name, description string, run func(ctx context.Context, args A) (R, error)) Tool {
	return newTool(name)(agentdef.Func(name, description, modeConfirmOnce, run))
}

const (
	modeReadOnly    = run.ModeSafeReadonly
	modeConfirmOnce = run.ModeConfirmOnce
)

// newTool keeps a construction error for Main to report: a program's
// list of tools stays one expression.
func newTool(name string) func(agentdef.Builder, error) Tool {
	return func(b agentdef.Builder, err error) Tool { return Tool{name: name, build: b, err: err} }
}
