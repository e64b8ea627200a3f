package sqlite_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// checkpointEvent is the checkpoint_written event the harness writes for
// cp (stored by reference to its row).
func checkpointEvent(cp run.Checkpoint) run.Event {
	return run.Event{Type: run.EventCheckpointWritten,
		Data: fmt.Appendf(nil, `{"bytes":%d,"checkpoint_id":%q,"seq":%d}`, cp.Size, cp.ID, cp.Seq)}
}

// storedIDForm is how the checkpoint row at seq of runID stores its id:
// its SQL type and length.
func storedIDForm(t *testing.T, s *sqlite.Store, runID string, seq int64) string {
	t.Helper()
	var typ string
	var n int
	must(t, s.DB().QueryRow(`SELECT typeof(id), length(id) FROM checkpoints
		WHERE ck = ((SELECT rk FROM runs WHERE id = ?) << 32) + ?`, runID, seq).Scan(&typ, &n))
	return fmt.Sprintf("%s/%d", typ, n)
}

// TestCheckpointIDForms commits checkpoints whose ids have each form the
// store keeps (run.NewCheckpointID's naming its own seq: 10 bytes, no
// index entry; an older run.NewID or one naming another seq: 14 bytes;
// any other text), with parents that are and are not the checkpoint
// before, and reads every one back exactly, by id, in the list and in its
// checkpoint_written event.
func TestCheckpointIDForms(t *testing.T) {
	ctx := t.Context()
	s, r := leasedRun(t)
	misnamed := run.NewCheckpointID(9)
	cases := []struct {
		id, parent, form string
	}{
		{run.NewCheckpointID(1), "", "blob/10"},
		{run.NewID("cp"), "", "blob/14"}, // its random digits name another seq
		{"cp_Not-The-NewID-Form", "", "text/21"},
		{run.NewCheckpointID(4), "", "blob/10"},
		{misnamed, "", "blob/14"},
		{run.NewCheckpointID(6), misnamed, "blob/10"},
	}
	var want []run.Checkpoint
	var events []run.Event
	for i, c := range cases {
		seq := int64(i + 1)
		parent := c.parent
		if parent == "" && i > 0 {
			parent = cases[i-1].id
		}
		state := fmt.Appendf(nil, `{"messages":[{"role":"user","text":"%d"}]}`, seq)
		cp := run.Checkpoint{ID: c.id, RunID: r.ID, Seq: seq, Parent: parent, Step: seq, State: state, Size: int64(len(state))}
		ev := checkpointEvent(cp)
		_, err := s.Commit(ctx, store.Commit{RunID: r.ID, Token: r.Lease.Token, Checkpoint: &cp, Events: []run.Event{ev},
			Run: &store.RunPatch{CheckpointID: cp.ID}})
		must(t, err)
		if got := storedIDForm(t, s, r.ID, seq); got != c.form {
			t.Errorf("checkpoint %d (%s) stored as %s, want %s", seq, c.id, got, c.form)
		}
		got, err := s.GetCheckpoint(ctx, r.ID, c.id)
		must(t, err)
		cp.StateHash, cp.CreatedAt = run.HashBytes(state), got.CreatedAt
		if !reflect.DeepEqual(got, cp) {
			t.Errorf("GetCheckpoint(%s):\n got %+v\nwant %+v", c.id, got, cp)
		}
		want, events = append(want, cp), append(events, ev)
	}
	// i = 5 named a parent that is not the checkpoint before: it is stored.
	list, err := s.ListCheckpoints(ctx, r.ID, 0, 0)
	must(t, err)
	if !reflect.DeepEqual(list, want) {
		t.Fatalf("ListCheckpoints:\n got %+v\nwant %+v", list, want)
	}
	got, err := s.ReadEvents(ctx, r.ID, 1, 0) // after run_created
	must(t, err)
	if len(got) != len(events) {
		t.Fatalf("%d events, want %d", len(got), len(events))
	}
	for i := range events {
		if string(got[i].Data) != string(events[i].Data) {
			t.Errorf("event %d: %s, want %s", got[i].Seq, got[i].Data, events[i].Data)
		}
	}
	a, err := store.ReadAudit(ctx, s, r.ID)
	must(t, err)
	if len(a.Problems) != 0 {
		t.Fatalf("audit: %v", a.Problems)
	}
	// A commit that names a checkpoint without writing one finds it in
	// either form, and not one the run does not have.
	for _, c := range cases {
		_, err := s.Commit(ctx, store.Commit{RunID: r.ID, Token: r.Lease.Token, Run: &store.RunPatch{CheckpointID: c.id}})
		must(t, err)
	}
	for _, id := range []string{run.NewCheckpointID(1), run.NewID("cp"), "cp_nope"} {
		_, err := s.Commit(ctx, store.Commit{RunID: r.ID, Token: r.Lease.Token, Run: &store.RunPatch{CheckpointID: id}})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("commit naming checkpoint %s: %v, want ErrNotFound", id, err)
		}
		if _, err := s.GetCheckpoint(ctx, r.ID, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetCheckpoint(%s): %v, want ErrNotFound", id, err)
		}
	}
}

// TestCheckpointIDConflictAcrossForms: an id is the run's whichever form
// it was stored in, so committing it again at another seq, where it would
// be stored in the other form, is a conflict.
func TestCheckpointIDConflictAcrossForms(t *testing.T) {
	ctx := t.Context()
	s, r := leasedRun(t)
	commit := func(id string, seq int64) error {
		_, err := s.Commit(ctx, store.Commit{RunID: r.ID, Token: r.Lease.Token,
			Checkpoint: &run.Checkpoint{ID: id, Seq: seq, State: []byte(`{}`)}})
		return err
	}
	derived, indexed := run.NewCheckpointID(1), run.NewCheckpointID(3)
	must(t, commit(derived, 1)) // stored derived
	must(t, commit(indexed, 2)) // names seq 3: stored whole, in the index
	for _, c := range []struct {
		id  string
		seq int64
	}{{derived, 3}, {indexed, 3}, {derived, 1}} {
		if err := commit(c.id, c.seq); !errors.Is(err, store.ErrConflict) {
			t.Errorf("checkpoint %s again at seq %d: %v, want ErrConflict", c.id, c.seq, err)
		}
	}
	must(t, commit(run.NewCheckpointID(3), 3))
}

// TestCheckpointIDsMigration writes checkpoints at schema version 6 (every
// id as run.NewID's 14 bytes or text, a run key column) and reads them back
// after 0007: an id whose digits happen to name its own seq is stored
// derived, the others as they were, and each is found by id.
func TestCheckpointIDsMigration(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "keel.db")
	db := dbAtVersion(t, path, 6)
	const runID = "run_v6"
	ids := []string{"cp_0123456789ab00000001cdef0123", "cp_0123456789ab00000009cdef0123", "cp_text"}
	exec := func(q string, a ...any) {
		t.Helper()
		if _, err := db.Exec(q, a...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`INSERT INTO sessions VALUES ('ses_1', 'alice', 0)`)
	exec(`INSERT INTO runs(id, session_id, owner, status, input_policy, created_at, updated_at, rk, checkpoint_id)
		VALUES (?, 'ses_1', 'alice', 'running', 'reject', 1, 1, 3, ?)`, runID, ids[2])
	exec(`INSERT INTO checkpoints(ck, rk, id, parent, step, state, size, created_at) VALUES
		((3 << 32) + 1, 3, unhex('0123456789ab00000001cdef0123'), '', 1, '{}', 2, 10),
		((3 << 32) + 2, 3, unhex('0123456789ab00000009cdef0123'), NULL, 2, '{}', 2, 11),
		((3 << 32) + 3, 3, 'cp_text', NULL, 3, '{}', 2, 12)`)
	exec(`INSERT INTO grants VALUES ('ses_1', 'publish', 'ap_1', 'alice', 5)`)
	must(t, db.Close())

	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	must(t, err)
	defer s.Close()
	for i, form := range []string{"blob/10", "blob/14", "text/7"} {
		if got := storedIDForm(t, s, runID, int64(i+1)); got != form {
			t.Errorf("checkpoint %s stored as %s, want %s", ids[i], got, form)
		}
		cp, err := s.GetCheckpoint(ctx, runID, ids[i])
		must(t, err)
		parent := ""
		if i > 0 {
			parent = ids[i-1]
		}
		if cp.Seq != int64(i+1) || cp.Parent != parent || cp.Step != int64(i+1) || cp.CreatedAt != ts(int64(10+i)) {
			t.Errorf("GetCheckpoint(%s) = %+v", ids[i], cp)
		}
	}
	if ok, err := s.HasGrant(ctx, "ses_1", "publish"); err != nil || !ok {
		t.Fatalf("grant after migration: %v, %v", ok, err)
	}
	r, err := s.AcquireLease(ctx, runID, "w1", time.Minute)
	must(t, err)
	_, err = s.Commit(ctx, store.Commit{RunID: runID, Token: r.Lease.Token,
		Checkpoint: &run.Checkpoint{ID: ids[0], Seq: 4, State: []byte(`{}`)}})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a migrated id again: %v, want ErrConflict", err)
	}
}
