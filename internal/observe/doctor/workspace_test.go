package doctor_test

import (
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/kernel/tool"
	"github.com/keelrun/keel/internal/observe/doctor"
	"github.com/keelrun/keel/internal/sandbox"
)

// wsFacts are AWS facts (no keel dev gap) with the given workspaces.
func wsFacts(sb string, agents ...doctor.AgentWorkspace) doctor.Facts {
	f := doctor.Facts{Executor: "aws-stepfunctions", Store: doctor.Backend{Kind: "dynamo", Location: "t"},
		Artifacts: doctor.Backend{Kind: "s3", Location: "b"}}
	f.Workspaces = doctor.Workspaces{Agents: agents, Sandbox: sb}
	if len(agents) > 0 {
		f.Workspaces.Root = "/var/keel/ws"
		f.Workspaces.ManifestKey = "runs/{run_id}/checkpoints/workspace-manifests/{sha256}.json"
		f.Workspaces.BlobKey = "runs/{run_id}/checkpoints/workspace-blobs/{sha256}"
	}
	return f
}

func TestWorkspaceQuestions(t *testing.T) {
	coder := doctor.AgentWorkspace{Agent: "coder", Commands: true}
	for _, tc := range []struct {
		name string
		f    doctor.Facts
		n    int
		// answer, facts and gaps each must contain these; noGaps: none at all.
		answer, facts, gaps string
		noGaps              bool
	}{
		{"no workspace Q3", wsFacts("bubblewrap"), 3, "not through Keel", "no agent has a workspace", "", true},
		{"no workspace Q5", wsFacts("bubblewrap"), 5, "", "no agent runs commands", "", true},
		{"no workspace Q9", wsFacts("bubblewrap"), 9, "in the artifact store s3:b", "no agent has a workspace", "", true},
		{"files only Q3", wsFacts("unsafe", doctor.AgentWorkspace{Agent: "notes"}), 3, "no: each run has its own workspace tree, and no agent runs commands",
			"/var/keel/ws/{run_id} (0700)", "", true},
		{"files only Q5 (unsafe does not matter)", wsFacts("unsafe", doctor.AgentWorkspace{Agent: "notes"}), 5, "", "no agent runs commands", "", true},
		{"bubblewrap Q3", wsFacts("bubblewrap", coder), 3, "commands run under bubblewrap", "no other run's tree", "", true},
		{"bubblewrap Q5", wsFacts("bubblewrap", coder), 5, "empty environment", "PATH, HOME and LANG only", "", true},
		{"bubblewrap with network Q5", wsFacts("bubblewrap", doctor.AgentWorkspace{Agent: "coder", Commands: true, Network: true}), 5,
			"", "empty environment", "coder share the worker's network", false},
		{"unsafe Q3", wsFacts("unsafe", coder), 3, "YES, through commands", "coder", "KEEL_SANDBOX=unsafe: the commands of coder run as plain child processes", false},
		{"unsafe Q5", wsFacts("unsafe", coder), 5, "KEEL_SANDBOX=unsafe", "", "can read the model's API key", false},
		{"workspace Q9", wsFacts("unsafe", coder), 9, "a manifest per checkpoint",
			"manifest runs/{run_id}/checkpoints/workspace-manifests/{sha256}.json, blobs runs/{run_id}/checkpoints/workspace-blobs/{sha256}", "", true},
		{"workspace Q9 reads", wsFacts("bubblewrap", coder), 9, "", "GET /v1/runs/{id}/workspace/files", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Facts without agents leave other questions bare: only tc.n is read.
			a := doctor.Answers(tc.f)[tc.n-1]
			if !strings.Contains(a.Answer, tc.answer) {
				t.Errorf("answer %q lacks %q", a.Answer, tc.answer)
			}
			if !strings.Contains(joined(a), tc.facts) {
				t.Errorf("facts lack %q:\n%s", tc.facts, joined(a))
			}
			if !strings.Contains(gapsOf(a), tc.gaps) {
				t.Errorf("gaps lack %q: %q", tc.gaps, a.Gaps)
			}
			if tc.noGaps && len(a.Gaps) != 0 {
				t.Errorf("unexpected gaps %q", a.Gaps)
			}
		})
	}
}

// TestWorkspaceFactsFromComposition checks the facts come from what
// compose built: the agents' workspace definitions, KEEL_SANDBOX and
// KEEL_WORKSPACE_ROOT, not from defaults.
func TestWorkspaceFactsFromComposition(t *testing.T) {
	noTools := func(compose.ToolEnv) ([]tool.Tool, error) { return nil, nil }
	script := compose.ModelChoice{Script: []byte(`{"turns":[]}`)}
	app := compose.App{Agents: []compose.AgentDef{
		{Name: "plain", Model: script, Tools: noTools},
		{Name: "notes", Model: script, Tools: noTools, Workspace: &compose.WorkspaceDef{}},
		{Name: "coder", Model: script, Tools: noTools, Workspace: &compose.WorkspaceDef{Commands: true,
			Policy: sandbox.Policy{AllowHosts: []string{"proxy.golang.org"}}}},
	}}
	root := t.TempDir()
	rt := open(t, app, map[string]string{"KEEL_SANDBOX": "unsafe", "KEEL_WORKSPACE_ROOT": root})
	f := rt.Deployment("aws-stepfunctions", func(string) string { return "" })
	w := f.Workspaces
	want := []doctor.AgentWorkspace{{Agent: "coder", Commands: true, Network: true}, {Agent: "notes"}}
	if len(w.Agents) != 2 || w.Agents[0] != want[0] || w.Agents[1] != want[1] {
		t.Errorf("agents %+v, want %+v", w.Agents, want)
	}
	if w.Sandbox != "unsafe" || w.Root != root || w.ManifestKey != "runs/{run_id}/checkpoints/workspace-manifests/{sha256}.json" ||
		w.BlobKey != "runs/{run_id}/checkpoints/workspace-blobs/{sha256}" {
		t.Errorf("workspaces %+v", w)
	}
	a := answersOf(f)
	if g := gapsOf(a[3]); !strings.Contains(g, "KEEL_SANDBOX=unsafe: the commands of coder") || !strings.Contains(g, root) {
		t.Errorf("Q3 gaps %q", a[3].Gaps)
	}
	if g := gapsOf(a[5]); !strings.Contains(g, "KEEL_SANDBOX=unsafe: the commands of coder inherit the worker's environment") {
		t.Errorf("Q5 gaps %q", a[5].Gaps)
	}
	if !strings.Contains(joined(a[9]), "the workspaces of coder, notes are versioned") {
		t.Errorf("Q9 facts %q", a[9].Facts)
	}

	// No workspace anywhere: the sandbox is not reported, the answers say so.
	f = open(t, compose.App{Agents: app.Agents[:1]}, nil).Deployment("local", func(string) string { return "" })
	if len(f.Workspaces.Agents) != 0 || f.Workspaces.Root != "" || f.Workspaces.Sandbox != "bubblewrap" {
		t.Errorf("workspaces without agents %+v", f.Workspaces)
	}
	if a := answersOf(f); !strings.Contains(joined(a[3]), "no agent has a workspace") {
		t.Errorf("Q3 facts %q", a[3].Facts)
	}
}

// answersOf indexes the answers by question number, for facts whose
// agents have no tools (answers insists on a fact for every question).
func answersOf(f doctor.Facts) map[int]doctor.Answer {
	out := map[int]doctor.Answer{}
	for _, a := range doctor.Answers(f) {
		out[a.N] = a
	}
	return out
}
