package agentver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
)

// Open is what a run has open when a Step is about to run it under
// another version: what the check compares against. Its JSON is what
// GET /v1/runs/{id}/version serves (upgrade-check --api); it is never
// stored.
type Open struct {
	// Operations are its pending operations (an intent recorded, the
	// outcome not yet): they are reconciled under the contract recorded
	// by the version that wrote them.
	Operations []run.Operation `json:"operations"`
	// Approvals are its approvals still pending, or approved for a call
	// that has not run yet: a person decided on those exact arguments.
	// Their JSON leaves out the task token (run.Approval), which the check
	// never reads.
	Approvals []run.Approval `json:"approvals"`
	// Calls are the tool calls the model made that have no result yet.
	Calls []Call `json:"calls"`
	// Grants are the confirm_once tools the run's session holds a grant
	// for: a person allowed the tool as the old version defined it.
	Grants []string `json:"grants"`
	// Inputs is how many queued inputs wait for the run's next turn.
	Inputs int `json:"inputs"`
}

// Call is an open tool call of the transcript.
type Call struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

// Action is what a check decides for a run.
type Action string

// Actions.
const (
	// Continue: the run's records were written by this version.
	Continue Action = "continue"
	// Move: another version wrote them, and everything the run has open
	// means the same under this one; the Step goes on and records
	// agent_upgraded.
	Move Action = "move"
	// Stop: the run depends on something this version changed; it waits
	// for a person (needs_human) with the differences named.
	Stop Action = "stop"
)

// Verdict is the result of [Check].
type Verdict struct {
	Action Action `json:"action"`
	From   string `json:"from"`
	To     string `json:"to"`
	// Changes are the differences between the versions, in words; with
	// Stop, Problems are the ones the run cannot go on with.
	Changes  []string `json:"changes,omitempty"`
	Problems []string `json:"problems,omitempty"`
	// Notes say what moving implies for the run's open records (how a
	// pending operation will be reconciled).
	Notes []string `json:"notes,omitempty"`
}

// Reason is the verdict in one line: the problems when it stops, else
// the changes.
func (v Verdict) Reason() string {
	switch {
	case len(v.Problems) > 0:
		return strings.Join(v.Problems, "; ")
	case v.Action == Continue && len(v.Notes) > 0:
		return strings.Join(v.Notes, "; ")
	case v.Action == Continue:
		return "same version"
	case len(v.Changes) == 0 && len(v.Notes) == 0:
		return "no change to what the run recorded (build only)"
	}
	return strings.Join(append(append([]string{}, v.Changes...), v.Notes...), "; ")
}

// Validator checks recorded arguments against the new version's schema
// of a tool (tool.Registry.Validate).
type Validator func(toolName string, args json.RawMessage) error

// Check decides whether records written under from may be run under to.
// It reads nothing and changes nothing: the harness and the preview
// command gather open and act on the verdict.
func Check(from, to Definition, open Open, validate Validator) Verdict {
	v := Verdict{Action: Continue, From: from.Version, To: to.Version}
	if from.Version == to.Version {
		return v
	}
	v.Action = Move
	v.Changes = Diff(from, to)
	stop := func(format string, a ...any) { v.Problems = append(v.Problems, fmt.Sprintf(format, a...)) }
	for _, op := range open.Operations {
		if p := pendingOp(from, to, op.Tool); p != "" {
			stop("operation %s of %s is pending under %s: %s", op.ID, op.Tool, Short(from.Version), p)
		} else if old, ok := from.Tool(op.Tool); ok {
			v.Notes = append(v.Notes, fmt.Sprintf("operation %s of %s is pending: reconciled under %s's contract (%s)%s",
				op.ID, op.Tool, Short(from.Version), old.Contract, unknowable(old.Contract)))
		}
	}
	for _, ap := range open.Approvals {
		if p := bound(from, to, ap.Tool); p != "" {
			stop("approval %s (%s) was asked for %s's arguments: %s; it is not applied", ap.ID, ap.Tool, Short(from.Version), p)
		}
	}
	for _, g := range open.Grants {
		if _, ok := to.Tool(g); !ok {
			continue // a grant for a tool that is gone allows nothing
		}
		if p := bound(from, to, g); p != "" {
			stop("the session's confirm-once grant of %s was given for %s's %s: %s; a person must allow the new one", g, Short(from.Version), g, p)
		}
	}
	for _, c := range open.Calls {
		if p := unbound(from, to, c, validate); p != "" {
			stop("open call of %s: %s", c.Tool, p)
		}
	}
	if len(v.Problems) > 0 {
		v.Action = Stop
	}
	return v
}

// bound checks a tool that a person's decision or a recorded intent
// depends on: it must exist with the same mode, contract, destination and
// schema.
func bound(from, to Definition, name string) string {
	if p := sameTool(from, to, name); p != "" {
		return p
	}
	old, _ := from.Tool(name)
	nw, _ := to.Tool(name)
	if old.SchemaSHA256 != nw.SchemaSHA256 && old.SchemaSHA256 != "" {
		return "its argument schema changed (" + schemaDiff(old.Schema, nw.Schema) + ")"
	}
	return ""
}

// pendingOp checks a tool with a pending operation: it is reconciled
// under the contract the old version recorded, with the new version's
// code (its Lookup, or a redispatch with the same key). So the tool must
// exist with the same mode, destination and schema, and still keep every
// promise the old contract made; a promise it added is not used.
func pendingOp(from, to Definition, name string) string {
	old, known := from.Tool(name)
	nw, ok := to.Tool(name)
	switch {
	case !ok:
		return "the tool is gone in " + Short(to.Version)
	case !known:
		return "the old definition does not know the tool"
	case old.Mode != nw.Mode || old.Effect != nw.Effect || old.Destination != nw.Destination:
		return sameTool(from, to, name)
	case old.SchemaSHA256 != nw.SchemaSHA256:
		return "its argument schema changed (" + schemaDiff(old.Schema, nw.Schema) + ")"
	}
	oc, nc := ParseContract(old.Contract), ParseContract(nw.Contract)
	if (oc.Idempotent && !nc.Idempotent) || (oc.Lookup && !nc.Lookup) {
		return fmt.Sprintf("its destination contract dropped a promise (%s → %s): the operation cannot be reconciled under %s", old.Contract, nw.Contract, old.Contract)
	}
	return ""
}

// ParseContract reads a contract as ops.Contract.String spells it.
func ParseContract(s string) ops.Contract {
	switch s {
	case "idempotency_key+lookup":
		return ops.Contract{Idempotent: true, Lookup: true}
	case "idempotency_key":
		return ops.Contract{Idempotent: true}
	case "lookup":
		return ops.Contract{Lookup: true}
	}
	return ops.Contract{}
}

// unbound checks a call nobody decided on yet: the tool must exist with
// the same mode and contract, and the recorded arguments must validate
// against the new schema (a looser schema is fine).
func unbound(from, to Definition, c Call, validate Validator) string {
	if p := sameTool(from, to, c.Tool); p != "" {
		return p
	}
	if validate != nil {
		if err := validate(c.Tool, c.Args); err != nil {
			return "its recorded arguments do not validate against the new schema: " + oneLine(err.Error())
		}
	}
	return ""
}

func sameTool(from, to Definition, name string) string {
	nw, ok := to.Tool(name)
	if !ok {
		return "the tool is gone in " + Short(to.Version)
	}
	old, ok := from.Tool(name)
	if !ok {
		return "" // the old definition did not know it: nothing to compare
	}
	switch {
	case old.Mode != nw.Mode:
		return fmt.Sprintf("its mode changed from %s to %s", old.Mode, nw.Mode)
	case old.Effect != nw.Effect:
		return "it changed between a plain tool and an effect"
	case old.Contract != nw.Contract:
		return fmt.Sprintf("its destination contract changed from %s to %s", old.Contract, nw.Contract)
	case old.Destination != nw.Destination:
		return fmt.Sprintf("its destination changed from %s to %s", old.Destination, nw.Destination)
	}
	return ""
}

// Diff names what changed from one definition to the next, in words.
func Diff(from, to Definition) []string {
	var out []string
	add := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	if from.InstructionsSHA256 != to.InstructionsSHA256 {
		add("instructions changed")
	}
	if from.Model != to.Model {
		add("model %s → %s", from.Model, to.Model)
	}
	for _, t := range from.Tools {
		nw, ok := to.Tool(t.Name)
		switch {
		case !ok:
			add("tool %s removed", t.Name)
		case t.Mode != nw.Mode || t.Contract != nw.Contract || t.Destination != nw.Destination || t.Effect != nw.Effect:
			add("tool %s: %s", t.Name, sameTool(from, to, t.Name))
		}
		if ok && t.SchemaSHA256 != nw.SchemaSHA256 {
			add("tool %s: schema changed (%s)", t.Name, schemaDiff(t.Schema, nw.Schema))
		}
	}
	for _, t := range to.Tools {
		if _, ok := from.Tool(t.Name); !ok {
			add("tool %s added", t.Name)
		}
	}
	if from.Limits != to.Limits || from.Timeout != to.Timeout {
		add("limits changed")
	}
	if from.InputPolicy != to.InputPolicy {
		add("input policy %q → %q", from.InputPolicy, to.InputPolicy)
	}
	if from.MaxOutputTokens != to.MaxOutputTokens || from.ContextTokens != to.ContextTokens {
		add("token bounds changed")
	}
	if from.Build != to.Build {
		add("build %s → %s", from.Build, to.Build)
	}
	return out
}

// schemaDiff names the properties one object schema has that the other
// lacks, and the required ones that changed: "-title +headline".
func schemaDiff(a, b json.RawMessage) string {
	pa, ra := props(a)
	pb, rb := props(b)
	var out []string
	for _, p := range pa {
		if !slices.Contains(pb, p) {
			out = append(out, "-"+p)
		}
	}
	for _, p := range pb {
		if !slices.Contains(pa, p) {
			out = append(out, "+"+p)
		}
	}
	for _, p := range rb {
		if !slices.Contains(ra, p) && slices.Contains(pa, p) {
			out = append(out, p+" now required")
		}
	}
	if len(out) == 0 {
		return "property types or constraints"
	}
	return "fields " + strings.Join(out, " ")
}

func props(schema json.RawMessage) (names, required []string) {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil, nil
	}
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, s.Required
}

// Policy says what a Step does with a run whose records another version
// wrote.
type Policy string

// Policies.
const (
	// Upgrade (the default): the run moves to the running version after
	// [Check]; a run that depends on what changed stops for a person.
	Upgrade Policy = "upgrade"
	// Pin: the run's Steps run only under the version it was created on.
	// A worker of another version does not run it: where that version's
	// code cannot be reached (keel dev: one binary at a time), the run
	// stops for a person, naming both versions.
	Pin Policy = "pin"
)

// oneLine joins a multi-line message (a schema validator's) into one.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n- ", "; ")), " ")
}

// unknowable says what reconciling under a contract without promises
// leads to.
func unknowable(contract string) string {
	if ParseContract(contract) == (ops.Contract{}) {
		return ", which cannot tell whether it happened: a person will decide"
	}
	return ""
}
