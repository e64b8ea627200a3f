package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// dbAtVersion makes a database file as a binary knowing only migrations
// 1..v left it: those files applied as they are, and recorded.
func dbAtVersion(t *testing.T, path string, v int) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)")
	must(t, err)
	t.Cleanup(func() { db.Close() })
	names, err := filepath.Glob("migrations/*.sql")
	must(t, err)
	sort.Strings(names)
	if len(names) < v {
		t.Fatalf("%d migrations, want at least %d", len(names), v)
	}
	_, err = db.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`)
	must(t, err)
	for i, n := range names[:v] {
		b, err := os.ReadFile(n)
		must(t, err)
		if _, err := db.Exec(string(b)); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		_, err = db.Exec(`INSERT INTO schema_migrations VALUES (?, ?, 0)`, i+1, filepath.Base(n))
		must(t, err)
	}
	return db
}

// TestCompactStepsMigration writes records the way the store wrote them at
// schema version 4 (hex hashes, stored prev_hash, run ids as keys, type
// names), opens the file with this binary, and reads every record back as
// it was, with the chain whole; the run then steps on, and the chain holds
// across the migration.
func TestCompactStepsMigration(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "keel.db")
	db := dbAtVersion(t, path, 4)
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	const runID, legacyID = "run_old", "run_legacy"
	args := []byte(`{"text":"hello"}`)
	argsHash, err := run.ArgsHash(args)
	must(t, err)
	state1 := []byte(`{"messages":[{"role":"user","text":"q"}]}`)
	state2 := []byte(`{"messages":[{"role":"assistant","text":"a"}]}`)
	legacyHash := run.HashBytes([]byte("legacy")) // 64 hex digits, no "jcs:"
	events := []run.Event{
		{Type: run.EventRunCreated, Time: t0},
		{Type: run.EventModelCallStarted, Time: t0.Add(1), Data: []byte(`{"estimated_tokens":7,"messages":1}`)},
		{Type: run.EventModelCallCompleted, Time: t0.Add(2), Data: []byte(`{"answer":{"text":"a"},"tool_calls":0}`)},
		{Type: run.EventToolStarted, Time: t0.Add(3), PlanItemID: "item_1", Data: []byte(`{"tool":"echo"}`)},
		{Type: run.EventToolCompleted, Time: t0.Add(4), PlanItemID: "item_1", OperationID: "op_1", Data: []byte(`{"result_chars":5,"tool":"echo"}`)},
		{Type: run.EventCheckpointWritten, Time: t0.Add(5), Data: []byte(`{"bytes":45,"checkpoint_id":"cp_2","messages":1,"seq":2}`)},
		{Type: "custom_from_elsewhere", Time: t0.Add(6), Data: []byte(`{"x":1}`)},
	}
	head := run.Chain(runID, "", events)
	exec := func(q string, a ...any) {
		t.Helper()
		if _, err := db.Exec(q, a...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`INSERT INTO sessions VALUES ('ses_1', 'alice', 0)`)
	for _, id := range []string{runID, legacyID} {
		exec(`INSERT INTO runs(id, session_id, owner, status, input_policy, created_at, updated_at) VALUES (?, 'ses_1', 'alice', 'running', 'reject', 1, 1)`, id)
	}
	exec(`UPDATE runs SET last_seq = ?, last_hash = ?, checkpoint_id = 'cp_2' WHERE id = ?`, len(events), head, runID)
	for i, e := range events {
		exec(`INSERT INTO events(run_id, seq, type, time, plan_item_id, operation_id, data, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			runID, i+1, e.Type, e.Time.UnixNano(), e.PlanItemID, e.OperationID, e.Data, e.PrevHash, e.Hash)
	}
	// A run from before the chain (migration 0002): no hashes.
	exec(`INSERT INTO events(run_id, seq, type, time, data) VALUES (?, 1, 'run_created', ?, NULL), (?, 2, 'turn_started', ?, '{}')`,
		legacyID, t0.UnixNano(), legacyID, t0.Add(1).UnixNano())
	exec(`UPDATE runs SET last_seq = 2 WHERE id = ?`, legacyID)
	exec(`INSERT INTO checkpoints(run_id, id, seq, parent, step, state, state_hash, size, created_at) VALUES
		(?, 'cp_1', 1, '', 0, ?, ?, ?, 10), (?, 'cp_2', 2, 'cp_1', 1, ?, 'not-a-hex-hash', ?, 11)`,
		runID, state1, run.HashBytes(state1), len(state1), runID, state2, len(state2))
	exec(`INSERT INTO plan_items(run_id, id, ord, tool, args, args_hash, mode, status, call_id, result, updated_at) VALUES
		(?, 'item_1', 0, 'echo', ?, ?, 'safe_readonly', 'completed', 'call_1', '{"content":"hello"}', 12),
		(?, 'item_2', 1, 'echo', ?, ?, 'safe_readonly', 'pending', 'call_2', NULL, 13),
		(?, 'item_3', 2, 'echo', 'x', '', 'safe_readonly', 'failed', 'call_3', NULL, 14)`,
		runID, args, argsHash, runID, args, legacyHash, runID)
	must(t, db.Close())

	s, err := sqlite.Open(ctx, path, sqlite.Options{Clock: func() time.Time { return t0.Add(time.Hour) }})
	must(t, err)
	defer s.Close()

	got, err := s.ReadEvents(ctx, runID, 0, 0)
	must(t, err)
	if len(got) != len(events) {
		t.Fatalf("%d events after migration, want %d", len(got), len(events))
	}
	for i, e := range events {
		e.Seq = int64(i + 1)
		if g := got[i]; !reflect.DeepEqual(g, e) {
			t.Errorf("event %d after migration:\n got %+v\nwant %+v", i+1, g, e)
		}
	}
	// A page from the middle still carries its first event's prev_hash.
	page, err := s.ReadEvents(ctx, runID, 4, 2)
	must(t, err)
	if len(page) != 2 || page[0].Seq != 5 || page[0].PrevHash != events[3].Hash || page[1].Hash != events[5].Hash {
		t.Fatalf("page after seq 4: %+v", page)
	}
	for _, id := range []string{runID, legacyID} {
		a, err := store.ReadAudit(ctx, s, id)
		must(t, err)
		if len(a.Problems) != 0 {
			t.Fatalf("%s: chain after migration: %v", id, a.Problems)
		}
	}

	cps, err := s.ListCheckpoints(ctx, runID, 0, 0)
	must(t, err)
	if len(cps) != 2 || cps[0].StateHash != run.HashBytes(state1) || cps[1].StateHash != "not-a-hex-hash" ||
		cps[1].Parent != "cp_1" || !bytes.Equal(cps[1].State, state2) || cps[1].RunID != runID {
		t.Fatalf("checkpoints after migration: %+v", cps)
	}
	cp, err := s.GetCheckpoint(ctx, runID, "cp_1")
	must(t, err)
	if !reflect.DeepEqual(cp, cps[0]) {
		t.Fatalf("GetCheckpoint cp_1 %+v, listed %+v", cp, cps[0])
	}
	items, err := s.ListPlanItems(ctx, runID)
	must(t, err)
	wantHashes := []string{argsHash, legacyHash, ""}
	if len(items) != 3 {
		t.Fatalf("%d plan items after migration", len(items))
	}
	for i, it := range items {
		if it.ArgsHash != wantHashes[i] || it.RunID != runID || it.ID != fmt.Sprintf("item_%d", i+1) {
			t.Errorf("plan item %d after migration: %+v", i, it)
		}
	}

	// The run steps on: the chain continues from the migrated head, and the
	// new checkpoint_written is kept by reference to its row.
	r, err := s.AcquireLease(ctx, runID, "w1", time.Minute)
	must(t, err)
	state3 := []byte(`{"messages":[]}`)
	cp3 := &run.Checkpoint{ID: "cp_3", Seq: 3, Parent: "cp_2", State: state3, Size: int64(len(state3)), StateHash: run.HashBytes(state3)}
	data := fmt.Sprintf(`{"bytes":%d,"checkpoint_id":"cp_3","seq":3}`, len(state3))
	_, err = s.Commit(ctx, store.Commit{RunID: runID, Token: r.Lease.Token, Checkpoint: cp3,
		Events: []run.Event{{Type: run.EventCheckpointWritten, Data: []byte(data)}}})
	must(t, err)
	a, err := store.ReadAudit(ctx, s, runID)
	must(t, err)
	last := a.Events[len(a.Events)-1]
	if len(a.Problems) != 0 || string(last.Data) != data || last.PrevHash != head {
		t.Fatalf("after a new commit: problems %v, last event %+v", a.Problems, last)
	}
	var kind string
	must(t, s.DB().QueryRowContext(ctx, `SELECT typeof(data) FROM events WHERE ek = `+eventKey, runID, last.Seq).Scan(&kind))
	if kind != "integer" {
		t.Fatalf("the new checkpoint_written is stored as %s, want a reference (integer)", kind)
	}
}

// TestCheckpointEventReference: a checkpoint_written stored by reference
// reads its checkpoint row, so editing that row breaks the event's hash.
func TestCheckpointEventReference(t *testing.T) {
	ctx := context.Background()
	s, r := leasedRun(t)
	state := []byte(`{"messages":[]}`)
	cp := &run.Checkpoint{ID: "cp_a", Seq: 1, State: state, Size: int64(len(state))}
	_, err := s.Commit(ctx, store.Commit{RunID: r.ID, Token: r.Lease.Token, Checkpoint: cp,
		Events: []run.Event{{Type: run.EventCheckpointWritten, Data: []byte(`{"bytes":15,"checkpoint_id":"cp_a","seq":1}`)}}})
	must(t, err)
	a, err := store.ReadAudit(ctx, s, r.ID)
	must(t, err)
	if len(a.Problems) != 0 {
		t.Fatalf("intact: %v", a.Problems)
	}
	if _, err := s.DB().ExecContext(ctx, `UPDATE checkpoints SET size = 99999`); err != nil {
		t.Fatal(err)
	}
	a, err = store.ReadAudit(ctx, s, r.ID)
	must(t, err)
	if len(a.Problems) == 0 || a.Problems[0].Kind != run.ChainEdited || a.Problems[0].Seq != 2 {
		t.Fatalf("checkpoint row edited under its event: problems %v", a.Problems)
	}
}

// TestPackedPayloadsMigration writes records the way the store wrote them
// at schema version 5 (ids as text, payloads as given, modes and statuses
// by name, every hash stored), opens the file with this binary, and reads
// every record back as it was; the run then steps on: a plan item written
// before is updated in place (its id has one stored form), a checkpoint id
// written before is still a conflict, and the chain holds across.
func TestPackedPayloadsMigration(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "keel.db")
	db := dbAtVersion(t, path, 5)
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const runID = "run_v5"
	cp1, cp2 := "cp_0123456789abcdef0123456789", "cp_Not-The-NewID-Form"
	item1, item2 := "item_00112233445566778899aabbcc", "item_x"
	args := []byte(`{"text":"hello, hello, hello, hello"}`)
	argsHash, err := run.ArgsHash(args)
	must(t, err)
	state1 := []byte(`{"messages":[{"role":"user","text":"a question long enough to compress"}]}`)
	state2 := []byte{0x01, 0xff, 'b', 'i', 'n'} // not JSON, and it starts with the deflate tag
	result2 := []byte{0x00, 'r', 'a', 'w'}
	events := []run.Event{
		{Type: run.EventRunCreated, Time: t0},
		{Type: run.EventToolCompleted, Time: t0.Add(1), PlanItemID: item1, Data: []byte(`{"duration_us":7,"result_chars":5,"tool":"echo"}`)},
		{Type: run.EventCheckpointWritten, Time: t0.Add(2), Data: []byte(fmt.Sprintf(`{"bytes":%d,"checkpoint_id":"%s","seq":1}`, len(state1), cp1))},
	}
	head := run.Chain(runID, "", events)
	exec := func(q string, a ...any) {
		t.Helper()
		if _, err := db.Exec(q, a...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	hash32 := func(h string) []byte {
		b, err := hex.DecodeString(strings.TrimPrefix(h, run.ArgsHashPrefix))
		must(t, err)
		return b
	}
	exec(`INSERT INTO sessions VALUES ('ses_1', 'alice', 0)`)
	exec(`INSERT INTO runs(id, session_id, owner, status, input_policy, created_at, updated_at, rk, last_seq, last_hash, checkpoint_id)
		VALUES (?, 'ses_1', 'alice', 'running', 'reject', 1, 1, 7, ?, ?, ?)`, runID, len(events), head, cp2)
	for i, e := range events {
		var data any = []byte(e.Data)
		if e.Type == run.EventCheckpointWritten {
			data = 1 // by reference, as 0005 stored it
		}
		exec(`INSERT INTO events(ek, type, time, plan_item_id, operation_id, data, hash) VALUES ((7 << 32) + ?, ?, ?, ?, '', ?, ?)`,
			i+1, e.Type, e.Time.UnixNano(), e.PlanItemID, data, hash32(e.Hash))
	}
	exec(`INSERT INTO checkpoints(ck, rk, id, parent, step, state, state_ref, state_hash, size, created_at) VALUES
		((7 << 32) + 1, 7, ?, '', 0, ?, '', ?, ?, 10), ((7 << 32) + 2, 7, ?, NULL, 1, ?, '', ?, ?, 11)`,
		cp1, state1, hash32(run.HashBytes(state1)), len(state1), cp2, state2, hash32(run.HashBytes(state2)), len(state2))
	exec(`INSERT INTO plan_items(rk, id, ord, tool, args, args_hash, mode, status, call_id, result, updated_at) VALUES
		(7, ?, 0, 'echo', ?, ?, 'safe_readonly', 'completed', 'call_1', '{"content":"hello"}', 12),
		(7, ?, 1, 'echo', ?, ?, 'mutating', 'awaiting_approval', 'call_2', ?, 13)`,
		item1, args, hash32(argsHash), item2, args, hash32(argsHash), result2)
	must(t, db.Close())

	s, err := sqlite.Open(ctx, path, sqlite.Options{Clock: func() time.Time { return t0.Add(time.Hour) }})
	must(t, err)
	defer s.Close()
	got, err := s.ReadEvents(ctx, runID, 0, 0)
	must(t, err)
	for i := range events {
		events[i].Seq = int64(i + 1)
	}
	if !reflect.DeepEqual(got, events) {
		t.Fatalf("events after migration:\n got %+v\nwant %+v", got, events)
	}
	wantCPs := []run.Checkpoint{
		{ID: cp1, RunID: runID, Seq: 1, Step: 0, State: state1, StateHash: run.HashBytes(state1), Size: int64(len(state1)), CreatedAt: ts(10)},
		{ID: cp2, RunID: runID, Seq: 2, Parent: cp1, Step: 1, State: state2, StateHash: run.HashBytes(state2), Size: int64(len(state2)), CreatedAt: ts(11)},
	}
	cps, err := s.ListCheckpoints(ctx, runID, 0, 0)
	must(t, err)
	if !reflect.DeepEqual(cps, wantCPs) {
		t.Fatalf("checkpoints after migration:\n got %+v\nwant %+v", cps, wantCPs)
	}
	for _, want := range wantCPs {
		cp, err := s.GetCheckpoint(ctx, runID, want.ID)
		must(t, err)
		if !reflect.DeepEqual(cp, want) {
			t.Fatalf("GetCheckpoint %s: %+v", want.ID, cp)
		}
	}
	wantItems := []run.PlanItem{
		{ID: item1, RunID: runID, Order: 0, Tool: "echo", Args: args, ArgsHash: argsHash, Mode: run.ModeSafeReadonly,
			Status: run.PlanCompleted, CallID: "call_1", Result: []byte(`{"content":"hello"}`), UpdatedAt: ts(12)},
		{ID: item2, RunID: runID, Order: 1, Tool: "echo", Args: args, ArgsHash: argsHash, Mode: run.ModeMutating,
			Status: run.PlanAwaitingApproval, CallID: "call_2", Result: result2, UpdatedAt: ts(13)},
	}
	items, err := s.ListPlanItems(ctx, runID)
	must(t, err)
	if !reflect.DeepEqual(items, wantItems) {
		t.Fatalf("plan items after migration:\n got %+v\nwant %+v", items, wantItems)
	}

	r, err := s.AcquireLease(ctx, runID, "w1", time.Minute)
	must(t, err)
	_, err = s.Commit(ctx, store.Commit{RunID: runID, Token: r.Lease.Token,
		Checkpoint: &run.Checkpoint{ID: cp1, Seq: 3, State: []byte(`{}`)}})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a new checkpoint with a migrated checkpoint's id: %v, want ErrConflict", err)
	}
	done := wantItems[1]
	done.Status, done.Result = run.PlanCompleted, []byte(`{"content":"published"}`)
	state3 := []byte(`{"messages":[{"role":"tool","tool_results":[{"call_id":"call_2","content":"published"}]}]}`)
	_, err = s.Commit(ctx, store.Commit{RunID: runID, Token: r.Lease.Token, PlanItems: []run.PlanItem{done},
		Checkpoint: &run.Checkpoint{ID: "cp_3", Seq: 3, Parent: cp2, State: state3},
		Events:     []run.Event{{Type: run.EventToolCompleted, PlanItemID: item2, Data: []byte(`{"result_chars":9,"tool":"echo"}`)}}})
	must(t, err)
	items, err = s.ListPlanItems(ctx, runID)
	must(t, err)
	done.UpdatedAt = t0.Add(time.Hour)
	if len(items) != 2 || !reflect.DeepEqual(items[1], done) {
		t.Fatalf("plan items after an update: %+v", items)
	}
	cp3, err := s.GetCheckpoint(ctx, runID, "cp_3")
	must(t, err)
	if cp3.Parent != cp2 || !bytes.Equal(cp3.State, state3) || cp3.StateHash != run.HashBytes(state3) {
		t.Fatalf("new checkpoint: %+v", cp3)
	}
	a, err := store.ReadAudit(ctx, s, runID)
	must(t, err)
	if len(a.Problems) != 0 || len(a.Events) != 4 || a.Events[3].PrevHash != head || a.Events[3].PlanItemID != item2 {
		t.Fatalf("after a new commit: problems %v, events %+v", a.Problems, a.Events)
	}
}

// ts is how the store reads a time back.
func ts(n int64) time.Time { return time.Unix(0, n).UTC() }
