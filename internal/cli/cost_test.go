package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/observe/cost"
)

// TestCost runs `keel cost` and `keel show` on a run whose records were
// written the way a Step writes them (lease, tool, checkpoint, completed),
// through the real API and SQLite store; the arithmetic itself is
// internal/observe/cost's hand-worked test.
func TestCost(t *testing.T) {
	e := newTestEnv(t, false)
	ctx := context.Background()
	code, out, errout := e.keel("", "run", "--json", "research", "cost", "me")
	if code != 0 {
		t.Fatalf("run: %d %s %s", code, out, errout)
	}
	var r struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	lease, err := e.st.AcquireLease(ctx, r.RunID, "lambda/step/t1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cp := run.Checkpoint{ID: "cp_1", Seq: 1, Step: 1, State: []byte(`{"messages":[]}`)}
	for _, c := range []store.Commit{
		{Run: &store.RunPatch{Status: run.StatusRunning}, Events: []run.Event{
			{Type: run.EventLeaseAcquired, Data: data(map[string]any{"owner": "lambda/step/t1", "token": lease.Lease.Token})},
			{Type: run.EventToolCompleted, PlanItemID: "pi1", Data: data(map[string]any{"tool": "collect"})},
		}},
		{Checkpoint: &cp, Run: &store.RunPatch{CheckpointID: "cp_1"}, Events: []run.Event{
			{Type: run.EventCheckpointWritten, Data: data(map[string]any{"checkpoint_id": "cp_1"})},
		}},
		{Run: &store.RunPatch{Status: run.StatusCompleted, Output: ptr("done"), ReleaseLease: true}, Events: []run.Event{{Type: run.EventRunCompleted}}},
	} {
		c.RunID, c.Token = r.RunID, lease.Lease.Token
		if _, err := e.st.Commit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}

	code, out, errout = e.keel("", "cost", "--json", r.RunID)
	if code != 0 {
		t.Fatalf("cost: %d %s %s", code, out, errout)
	}
	var rep cost.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("cost --json: %v\n%s", err, out)
	}
	// One Step on Lambda; Init + Step, Count, Route + Finalize, Outcome,
	// Done; the Step, the finalize and the request that created the run.
	if u := rep.Usage; u.StepInvocations != 1 || u.StateTransitions != 7 || u.LambdaInvocations != 3 || u.DynamoWRU == 0 || u.DynamoRRU == 0 {
		t.Errorf("usage %+v", u)
	}
	if rep.PriceDate != cost.Default().Date || rep.TotalUSD <= 0 {
		t.Errorf("report %+v", rep)
	}

	// A price table of the user's own: state transitions at $1 each.
	prices := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(prices, []byte(`{"date":"mine","state_transition":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errout = e.keel("", "cost", "--prices", prices, r.RunID)
	if code != 0 || !strings.Contains(out, "step functions") || !strings.Contains(out, "7.000000") || !strings.Contains(out, "of mine") {
		t.Errorf("cost --prices: %d\n%s%s", code, out, errout)
	}
	if code, _, errout = e.keel("", "cost", "--prices", filepath.Join(t.TempDir(), "none.json"), r.RunID); code != exitUsage || !strings.Contains(errout, "--prices") {
		t.Errorf("missing price file: %d %s", code, errout)
	}
	if code, _, errout = e.keel("", "cost", "run_nope"); code != exitNotFound {
		t.Errorf("unknown run: %d %s", code, errout)
	}
	code, out, _ = e.keel("", "show", r.RunID)
	if code != 0 || !strings.Contains(out, "on AWS") || !strings.Contains(out, "keel cost "+r.RunID) {
		t.Errorf("show: %d %s", code, out)
	}
}
