package telemetry_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	artfs "github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/observe/telemetry"
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
	const apiKey = "sk-canary-API-KEY-0123456789"
	env := telemetry.Env{Version: "v9.9.9", Commit: "abc123", Models: map[string]string{"a": "anthropic:claude-x"},
		Config: telemetry.MaskedConfig(struct {
			Store           string
			AnthropicAPIKey string
			SFNToken        string
			MaxTokens       int
		}{Store: "sqlite:/x", AnthropicAPIKey: apiKey, SFNToken: "tok-SECRET-abcdefgh", MaxTokens: 7})}
	info, err := telemetry.Write(ctx, st, arts, r.ID, env)
	if err != nil {
		t.Fatal(err)
	}
	if info.Key.Name != "debug-bundle-awaiting_approval.tar.gz" || info.Key.CheckpointID != "cp_1" {
		t.Fatalf("key %+v", info.Key)
	}
	data, _, err := arts.Get(ctx, info.Key)
	if err != nil {
		t.Fatal(err)
	}
	files, err := telemetry.ReadArchive(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range telemetry.Files {
		if _, ok := files[name]; !ok {
			t.Fatalf("%s missing from the archive (has %d files)", name, len(files))
		}
	}
	for name, b := range files {
		for _, secret := range []string{secret, apiKey, "tok-SECRET-abcdefgh"} {
			if strings.Contains(string(b), secret) {
				t.Fatalf("%s holds the secret %q", name, secret)
			}
		}
	}
	env2 := string(files["env.txt"])
	for _, want := range []string{"keel_version=v9.9.9", "keel_commit=abc123", "model.a=anthropic:claude-x", "AnthropicAPIKey=****", "MaxTokens=7", "Store=sqlite:/x"} {
		if !strings.Contains(env2, want) {
			t.Errorf("env.txt lacks %q:\n%s", want, env2)
		}
	}
	var last telemetry.LastState
	if err := json.Unmarshal(files["last_state.json"], &last); err != nil {
		t.Fatal(err)
	}
	if len(last.Messages) != 1 || len(last.OpenApprovals) != 1 || len(last.OpenItems) != 1 || last.Checkpoint == nil || last.Checkpoint.ID != "cp_1" {
		t.Fatalf("last state %s", files["last_state.json"])
	}
	if strings.Contains(string(files["checkpoints.jsonl"]), "messages") {
		t.Fatalf("checkpoints.jsonl holds the state: %s", files["checkpoints.jsonl"])
	}
	if n := strings.Count(string(files["events.jsonl"]), "\n"); n == 0 {
		t.Fatal("events.jsonl is empty")
	}
	// Writing again for an unchanged run is a no-op, not a conflict.
	if again, err := telemetry.Write(ctx, st, arts, r.ID, env); err != nil || again.SHA256 != info.SHA256 {
		t.Fatalf("second write: %v (%s, first %s)", err, again.SHA256, info.SHA256)
	}
}
