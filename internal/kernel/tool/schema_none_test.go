//go:build keel_no_models

package tool_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/kernel/tool"
)

// In a build of a role that runs no tool call, a lazy registry still
// refuses what is not JSON and unknown tools, and Validate says it cannot
// validate rather than passing anything through.
func TestRegistryWithoutValidator(t *testing.T) {
	good := schemaTool{"count", `{"type":"object"}`}
	for _, bad := range []string{`{"type":`, `{} {}`, ``} {
		if _, err := tool.NewLazyRegistry(schemaTool{"x", bad}); err == nil {
			t.Errorf("schema %q was accepted", bad)
		}
	}
	r, err := tool.NewLazyRegistry(good)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Validate("nope", json.RawMessage(`{}`)); !errors.Is(err, tool.ErrUnknownTool) {
		t.Errorf("unknown tool: err = %v", err)
	}
	if _, err := r.Validate("count", json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "validates no tool call") {
		t.Errorf("Validate = %v, want a refusal naming why", err)
	}
}
