package telemetry_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	artfs "github.com/keelrun/keel/internal/artifact/fs"
	"github.com/keelrun/keel/internal/run"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/store/sqlite"
	"github.com/keelrun/keel/internal/telemetry"
)

func TestBundleHoldsTheRecordsButNoTaskToken(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "k.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	arts, _ := artfs.New(t.TempDir())
	r, _, _ := st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "s", Owner: "o", Agent: "a", Request: "x", InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()})
	r, _ = st.AcquireLease(ctx, r.ID, "w", time.Minute)
	args := json.RawMessage(`{"a":1}`)
	h, _ := run.ArgsHash(args)
	if _, err := st.Commit(ctx, store.Commit{RunID: r.ID, Token: r.Lease.Token, Run: &store.RunPatch{Status: run.StatusAwaitingApproval},
		PlanItems:    []run.PlanItem{{ID: "item_1", Order: 1, Tool: "t", Args: args, Mode: run.ModeMutating, Status: run.PlanAwaitingApproval, CallID: "c"}},
		NewApprovals: []run.Approval{{ID: "apr_1", SessionID: "s", PlanItemID: "item_1", Tool: "t", Mode: run.ModeMutating, Args: args, ArgsHash: h, Status: run.ApprovalPending}},
		Checkpoint:   &run.Checkpoint{ID: "cp_1", Seq: 1, Step: 1, State: []byte(`{"messages":[{"role":"user","text":"x"}]}`)}}); err != nil {
		t.Fatal(err)
	}
	const secret = "task-token-SECRET-123"
	if _, err := st.AttachTaskToken(ctx, r.ID, "apr_1", secret); err != nil {
		t.Fatal(err)
	}
	info, err := telemetry.Write(ctx, st, arts, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	data, _, err := arts.Get(ctx, info.Key)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), secret) {
		t.Fatal("the task token leaked into the bundle")
	}
	var b telemetry.Bundle
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	if len(b.Approvals) != 1 || len(b.PlanItems) != 1 || len(b.Checkpoints) != 1 || b.Checkpoints[0].State != nil || len(b.Events) == 0 {
		t.Fatalf("bundle %+v", b)
	}
	// Writing again for an unchanged run is a no-op, not a conflict.
	if _, err := telemetry.Write(ctx, st, arts, r.ID); err != nil {
		t.Fatalf("second write: %v", err)
	}
}
