package keel

import (
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// TestSubAgentChecks: Main refuses a sub-agent that names an agent the
// program lacks, or bad limits; a valid one is narrowed by its child
// agent's limits and never widened.
func TestSubAgentChecks(t *testing.T) {
	model := ScriptedModel([]byte(`{"turns":[{"text":"done"}]}`))
	child := Agent{Name: "writer", Model: model, Limits: Limits{MaxTokens: 1000, MaxToolCalls: 9}}
	cases := []struct {
		name string
		sub  Tool
		want string // "" means accepted
	}{
		{"known", SubAgent("write", "w", "writer", SubAgentLimits(Limits{MaxTokens: 5000, MaxToolCalls: 3})), ""},
		{"unknown agent", SubAgent("write", "w", "wirter"), `sub-agent tool "write" names agent "wirter", which this program does not have`},
		{"bad agent name", SubAgent("write", "w", "no spaces"), "agent"},
		{"negative limit", SubAgent("write", "w", "writer", SubAgentLimits(Limits{MaxTokens: -1})), "must not be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			app, err := build([]Agent{{Name: "boss", Model: model, Tools: []Tool{tc.sub}}, child})
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want one containing %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tools, err := app.Agents[0].Tools(compose.ToolEnv{})
			if err != nil {
				t.Fatal(err)
			}
			d, ok := tools[0].(tool.Delegating)
			if !ok {
				t.Fatalf("%T is not a sub-agent", tools[0])
			}
			if got := d.Delegation(); got.Agent != "writer" || got.Limits.MaxTokens != 1000 || got.Limits.MaxToolCalls != 3 {
				t.Fatalf("delegation %+v: want tokens narrowed to the child's 1000, tool calls to 3", got)
			}
		})
	}
}
