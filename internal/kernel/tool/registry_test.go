package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// schemaTool is a read-only tool with a given schema.
type schemaTool struct {
	name   string
	schema string
}

func (s schemaTool) Info() tool.Info {
	return tool.Info{Name: s.name, Mode: run.ModeSafeReadonly, Schema: json.RawMessage(s.schema)}
}

func (schemaTool) Run(context.Context, tool.Call) (tool.Result, error) { return tool.Result{}, nil }

// badCompile parses as JSON but is no schema: "type" must be a string or
// an array of strings.
const badCompile = `{"type": 5}`

// TestRegistryCompile holds both constructors to the same answers, and
// shows where each reports a schema that parses but does not compile:
// NewRegistry at once, NewLazyRegistry at the tool's first Validate, as
// ErrBadSchema (never ErrInvalidArgs: the arguments are not at fault).
func TestRegistryCompile(t *testing.T) {
	good := schemaTool{"count", `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`}
	bad := schemaTool{"broken", badCompile}
	for _, tc := range []struct {
		name string
		new  func(...tool.Tool) (*tool.Registry, error)
		lazy bool
	}{
		{name: "eager", new: tool.NewRegistry},
		{name: "lazy", new: tool.NewLazyRegistry, lazy: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.new(schemaTool{"x", `{"type":`}); err == nil {
				t.Error("a schema that is not JSON was accepted")
			}
			if _, err := tc.new(good, good); err == nil {
				t.Error("a duplicate name was accepted")
			}
			r, err := tc.new(good, bad)
			if !tc.lazy {
				if !errors.Is(err, tool.ErrBadSchema) {
					t.Fatalf("NewRegistry of a schema that does not compile: err = %v, want ErrBadSchema", err)
				}
				r, err = tc.new(good)
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				tool, args string
				want       error
			}{
				{"count", `{"n":3}`, nil},
				{"count", `{"n":"three"}`, tool.ErrInvalidArgs},
				{"count", `{}`, tool.ErrInvalidArgs},
				{"count", `[1]`, tool.ErrInvalidArgs},
				{"nope", `{}`, tool.ErrUnknownTool},
			} {
				if _, err := r.Validate(c.tool, json.RawMessage(c.args)); !errors.Is(err, c.want) {
					t.Errorf("Validate(%s, %s) = %v, want %v", c.tool, c.args, err, c.want)
				}
			}
			if tc.lazy {
				for range 2 { // the failure is kept, not retried
					_, err := r.Validate("broken", json.RawMessage(`{}`))
					if !errors.Is(err, tool.ErrBadSchema) || errors.Is(err, tool.ErrInvalidArgs) {
						t.Fatalf("Validate of a tool whose schema does not compile: err = %v, want ErrBadSchema alone", err)
					}
				}
			}
		})
	}
}

// The first Validates of a lazy registry may race: the schema is
// compiled once and every caller gets its answer (run with -race).
func TestLazyRegistryConcurrentFirstValidate(t *testing.T) {
	r, err := tool.NewLazyRegistry(schemaTool{"count", `{"type":"object","properties":{"n":{"type":"integer"}}}`})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = r.Validate("count", json.RawMessage(`{"n":"x"}`))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, tool.ErrInvalidArgs) {
			t.Errorf("caller %d: err = %v, want ErrInvalidArgs", i, err)
		}
	}
}
