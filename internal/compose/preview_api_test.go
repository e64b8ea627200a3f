package compose_test

import (
	"context"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// deployed serves runs in pages of two and their version records.
type deployed struct {
	runs     []api.Run
	versions map[string]api.RunVersion
	asked    []string
}

func (d *deployed) ListRuns(_ context.Context, o client.ListRunsOptions) (api.RunList, error) {
	start := 0
	if o.PageToken != "" {
		start = 2
	}
	end := min(start+2, len(d.runs))
	out := api.RunList{Runs: d.runs[start:end]}
	if end < len(d.runs) {
		out.NextPageToken = "p2"
	}
	return out, nil
}

func (d *deployed) RunVersion(_ context.Context, id string) (api.RunVersion, error) {
	d.asked = append(d.asked, id)
	return d.versions[id], nil
}

// TestPreviewUpgradeAPI: the runs in flight behind an API are decided as
// the store's are, page after page; the agent's model is a provider with
// no key in the environment, which the preview never builds.
func TestPreviewUpgradeAPI(t *testing.T) {
	app := compose.App{Agents: []compose.AgentDef{{Name: "a", System: "new", Model: compose.ModelChoice{Spec: "anthropic:claude-sonnet-4-5"},
		Tools: func(compose.ToolEnv) ([]tool.Tool, error) { return nil, nil }}}}
	cfg := config.Config{DataDir: t.TempDir()}
	old := agentver.Definition{Agent: "a", InstructionsSHA256: "old", Model: "anthropic:claude-sonnet-4-5", Build: "b0", Version: strings.Repeat("0", 64)}
	d := &deployed{
		runs: []api.Run{
			{RunID: "run_done", Agent: "a", Status: run.StatusCompleted},
			{RunID: "run_gone", Agent: "gone", Status: run.StatusRunning, AgentVersion: old.Version},
			{RunID: "run_moves", Agent: "a", Status: run.StatusAwaitingApproval},
			{RunID: "run_waits", Agent: "a", Status: run.StatusNeedsHuman},
		},
		versions: map[string]api.RunVersion{
			"run_gone":  {RunID: "run_gone", Agent: "gone", Status: run.StatusRunning, AgentVersion: old.Version},
			"run_moves": {RunID: "run_moves", Agent: "a", Status: run.StatusAwaitingApproval, RecordsVersion: old.Version, Definition: &old, Open: &agentver.Open{}},
			"run_waits": {RunID: "run_waits", Agent: "a", Status: run.StatusNeedsHuman, Error: "operation op_1 needs a person",
				RecordsVersion: strings.Repeat("1", 64), DefinitionMissing: "the definition of version 111111111111 is not stored"},
		},
	}
	rows, err := compose.PreviewUpgradeAPI(context.Background(), cfg, app, compose.Backends{}, d)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(d.asked, " ") != "run_gone run_moves run_waits" || len(rows) != 3 {
		t.Fatalf("asked %v, rows %+v: want every run in flight, on both pages, and no finished one", d.asked, rows)
	}
	want := []struct {
		id      string
		action  agentver.Action
		mention string
	}{
		{"run_gone", agentver.Stop, "the new program has no agent gone"},
		{"run_moves", agentver.Move, "instructions changed"},
		{"run_waits", agentver.Stop, "already waits for a person: operation op_1 needs a person; the definition of version 111111111111 is not stored"},
	}
	for i, w := range want {
		v := rows[i].Verdict
		if rows[i].RunID != w.id || v.Action != w.action || !strings.Contains(v.Reason(), w.mention) {
			t.Errorf("row %d: %s %s %q, want %s %s mentioning %q", i, rows[i].RunID, v.Action, v.Reason(), w.id, w.action, w.mention)
		}
	}
	if rows[0].Verdict.From != old.Version || rows[1].Verdict.From != old.Version || len(rows[1].Verdict.To) != 64 {
		t.Errorf("versions: %+v", rows)
	}

	// A definition without its open records is an answer the check
	// cannot use: an error, not a guess.
	d.versions["run_moves"] = api.RunVersion{RunID: "run_moves", Agent: "a", Status: run.StatusAwaitingApproval, RecordsVersion: old.Version, Definition: &old}
	if _, err := compose.PreviewUpgradeAPI(context.Background(), cfg, app, compose.Backends{}, d); err == nil || !strings.Contains(err.Error(), "run_moves: the API served no open records") {
		t.Fatalf("no open records: %v", err)
	}
}

// TestPreviewPinnedHome: a pinned run whose version the deployment still
// runs (its home, a retained step function version on AWS) continues
// there; with no home the new program would stop it for a person.
func TestPreviewPinnedHome(t *testing.T) {
	app := compose.App{Agents: []compose.AgentDef{{Name: "p", System: "new", Model: compose.ModelChoice{Spec: "anthropic:claude-sonnet-4-5"},
		Policy: agentver.Pin, Tools: func(compose.ToolEnv) ([]tool.Tool, error) { return nil, nil }}}}
	cfg := config.Config{DataDir: t.TempDir()}
	old := agentver.Definition{Agent: "p", InstructionsSHA256: "old", Model: "anthropic:claude-sonnet-4-5", Build: "b0", Version: strings.Repeat("0", 64)}
	for _, tc := range []struct {
		home    string
		action  agentver.Action
		mention string
	}{
		{home: "Keel-Step:3", action: agentver.Continue, mention: "pinned: its Steps keep running version 000000000000's code, on Keel-Step:3"},
		{action: agentver.Stop, mention: "the agent is pinned"},
	} {
		d := &deployed{
			runs: []api.Run{{RunID: "run_p", Agent: "p", Status: run.StatusAwaitingApproval}},
			versions: map[string]api.RunVersion{"run_p": {RunID: "run_p", Agent: "p", Status: run.StatusAwaitingApproval,
				RecordsVersion: old.Version, Home: tc.home, Definition: &old, Open: &agentver.Open{}}},
		}
		rows, err := compose.PreviewUpgradeAPI(context.Background(), cfg, app, compose.Backends{}, d)
		if err != nil || len(rows) != 1 {
			t.Fatalf("rows %+v, %v", rows, err)
		}
		if v := rows[0].Verdict; v.Action != tc.action || !strings.Contains(v.Reason(), tc.mention) {
			t.Errorf("home %q: %s %q, want %s mentioning %q", tc.home, v.Action, v.Reason(), tc.action, tc.mention)
		}
	}
}
