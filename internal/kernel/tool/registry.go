package tool

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/keelrun/keel/internal/kernel/run"
)

// ErrUnknownTool and ErrInvalidArgs are returned by Registry.Validate;
// ErrBadSchema by a lazy Registry's Validate when the tool's own schema
// does not compile (the tool's fault, not the arguments').
var (
	ErrUnknownTool = errors.New("unknown tool")
	ErrInvalidArgs = errors.New("invalid tool arguments")
	ErrBadSchema   = errors.New("tool schema does not compile")
)

// Registry holds the tools of an agent with their schemas.
type Registry struct {
	tools   map[string]Tool
	schemas map[string]*lazySchema
}

// lazySchema is a tool's schema, compiled at most once. The compiled
// schema is held as its Validate method value, not as a
// *jsonschema.Schema: a field's type is linked with every method that
// satisfies an interface (ValidationError's Error, which reaches
// golang.org/x/text's message printer), even in a build that never
// compiles a schema; a func type carries none of that.
type lazySchema struct {
	name     string
	doc      any // the parsed schema document
	once     sync.Once
	validate func(doc any) error
	err      error
}

func (l *lazySchema) compile() (func(doc any) error, error) {
	l.once.Do(func() {
		l.validate, l.err = compileSchema(l.name, l.doc)
		l.doc = nil
	})
	return l.validate, l.err
}

// NewRegistry compiles every tool's schema; a bad schema or a duplicate
// name is an error.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r, err := NewLazyRegistry(tools...)
	if err != nil {
		return nil, err
	}
	for _, n := range r.Names() {
		if _, err := r.schemas[n].compile(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// NewLazyRegistry is NewRegistry but compiles each tool's schema when
// Validate first meets the tool, not here: a process that never validates
// (a deployed role that runs no tool) never compiles one, and one that
// does pays for the JSON Schema meta-schema (10–17 ms, once a process) at
// its first tool call instead of at its start. What is checked here is
// the same but for the compile: names, modes, and that each schema is
// JSON. A schema that parses but does not compile is Validate's
// ErrBadSchema — which NewRegistry, run by keel dev, keel verify and the
// tests on the same tools, reports before a deployment.
func NewLazyRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{tools: map[string]Tool{}, schemas: map[string]*lazySchema{}}
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
		doc, err := parseJSON(info.Schema)
		if err != nil {
			return nil, fmt.Errorf("tool %q schema: %w", info.Name, err)
		}
		r.tools[info.Name] = t
		r.schemas[info.Name] = &lazySchema{name: info.Name, doc: doc}
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
// model can act on. It is safe for concurrent use.
func (r *Registry) Validate(name string, args json.RawMessage) (Tool, error) {
	t, ok := r.tools[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownTool, name, strings.Join(r.Names(), ", "))
	}
	validate, err := r.schemas[name].compile()
	if err != nil {
		return nil, err
	}
	doc, err := parseJSON(args)
	if err != nil {
		return nil, fmt.Errorf("%w for %s: not valid JSON: %v", ErrInvalidArgs, name, err)
	}
	if _, isObj := doc.(map[string]any); !isObj {
		return nil, fmt.Errorf("%w for %s: arguments must be a JSON object", ErrInvalidArgs, name)
	}
	if err := validate(doc); err != nil {
		return nil, fmt.Errorf("%w for %s: %v", ErrInvalidArgs, name, err)
	}
	return t, nil
}
