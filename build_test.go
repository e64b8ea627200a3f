package keel

import (
	"strings"
	"testing"
)

// TestBuildRejects: a bad agent definition is refused at start with an
// error naming the agent and the field, before anything runs or is stored.
func TestBuildRejects(t *testing.T) {
	model := ScriptedModel([]byte(`{"turns":[{"text":"done"}]}`))
	ok := func(mod func(*Agent)) Agent {
		a := Agent{Name: "a", Instructions: "x", Model: model}
		if mod != nil {
			mod(&a)
		}
		return a
	}
	cases := []struct {
		name   string
		agents []Agent
		want   string // "" means accepted
	}{
		{"one good agent", []Agent{ok(nil)}, ""},
		{"a window with room for the answer", []Agent{ok(func(a *Agent) { a.ContextTokens, a.MaxOutputTokens = 8192, 4096 })}, ""},
		{"no agents", nil, "no agents"},
		{"an agent twice", []Agent{ok(nil), ok(nil)}, `agent "a" is given twice`},
		{"negative limits", []Agent{ok(func(a *Agent) { a.Limits.MaxSteps = -1 })}, "limits must not be negative"},
		{"unknown version policy", []Agent{ok(func(a *Agent) { a.Versions = "latest" })}, `agent field Versions "latest": want "upgrade" or "pin"`},
		{"negative answer ceiling", []Agent{ok(func(a *Agent) { a.MaxOutputTokens = -1 })}, "MaxOutputTokens must not be negative"},
		{"negative window", []Agent{ok(func(a *Agent) { a.ContextTokens = -1 })}, "ContextTokens must not be negative"},
		{"window no larger than the answer", []Agent{ok(func(a *Agent) { a.ContextTokens, a.MaxOutputTokens = 4096, 4096 })}, "ContextTokens 4096 must exceed MaxOutputTokens 4096"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := build(tc.agents)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
