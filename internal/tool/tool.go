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
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/keelrun/keel/internal/ops"
	"github.com/keelrun/keel/internal/run"
	"github.com/santhosh-tekuri/jsonschema/v6"
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

// Intent is what an effectful call will change.
type Intent struct {
	ArtifactHash string
}

// ErrUnknownTool and ErrInvalidArgs are returned by Registry.Validate.
var (
	ErrUnknownTool = errors.New("unknown tool")
	ErrInvalidArgs = errors.New("invalid tool arguments")
)

// Registry holds the tools of an agent with their compiled schemas.
type Registry struct {
	tools   map[string]Tool
	schemas map[string]*jsonschema.Schema
}

// NewRegistry compiles every tool's schema; a bad schema or a duplicate
// name is an error.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{tools: map[string]Tool{}, schemas: map[string]*jsonschema.Schema{}}
	for _, t := range tools {
		info := t.Info()
		if info.Name == "" {
			return nil, errors.New("tool with empty name")
		}
		if _, dup := r.tools[info.Name]; dup {
			return nil, fmt.Errorf("tool %q registered twice", info.Name)
		}
		if !info.Mode.Valid() {
			return nil, fmt.Errorf("tool %q: mode %q is not one of safe_readonly, confirm_once, mutating", info.Name, info.Mode)
		}
		if _, eff := t.(Effectful); eff && info.Mode == run.ModeSafeReadonly {
			return nil, fmt.Errorf("tool %q has an external effect but mode safe_readonly", info.Name)
		}
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(info.Schema)))
		if err != nil {
			return nil, fmt.Errorf("tool %q schema: %w", info.Name, err)
		}
		c := jsonschema.NewCompiler()
		url := "keel:tool/" + info.Name
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("tool %q schema: %w", info.Name, err)
		}
		s, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("tool %q schema: %w", info.Name, err)
		}
		r.tools[info.Name] = t
		r.schemas[info.Name] = s
	}
	return r, nil
}

// Get returns the named tool.
func (r *Registry) Get(name string) (Tool, bool) {
	t, ok := r.tools[name]
	return t, ok
}

// Names lists the tools, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.tools))
	for n := range r.tools {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Validate checks that name is registered and args is a complete JSON
// object matching its schema. The error says what is wrong in words the
// model can act on.
func (r *Registry) Validate(name string, args json.RawMessage) (Tool, error) {
	t, ok := r.tools[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownTool, name, strings.Join(r.Names(), ", "))
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(args)))
	if err != nil {
		return nil, fmt.Errorf("%w for %s: not valid JSON: %v", ErrInvalidArgs, name, err)
	}
	if _, isObj := doc.(map[string]any); !isObj {
		return nil, fmt.Errorf("%w for %s: arguments must be a JSON object", ErrInvalidArgs, name)
	}
	if err := r.schemas[name].Validate(doc); err != nil {
		return nil, fmt.Errorf("%w for %s: %v", ErrInvalidArgs, name, err)
	}
	return t, nil
}
