package sqlite_test

import (
	"testing"

	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
)

// TestTraceParentMigration opens a database as the binary before the
// trace_parent column left it (schema version 3, a run in it: dbAtVersion) and checks
// that the migration adds the column and keeps the run, which then has no
// trace context.
func TestTraceParentMigration(t *testing.T) {
	ctx := t.Context()
	path := t.TempDir() + "/keel.db"
	db := dbAtVersion(t, path, 3)
	oldID := run.NewID("run")
	for _, q := range []string{`INSERT INTO sessions VALUES ('ses_1', 'alice', 0)`,
		`INSERT INTO runs(id, session_id, owner, agent, request, status, input_policy, created_at, updated_at)
			VALUES ('` + oldID + `', 'ses_1', 'alice', 'research', 'q', 'created', 'reject', 1, 1)`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	must(t, db.Close())
	old := run.Run{ID: oldID}

	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	must(t, err)
	defer s.Close()
	got, err := s.GetRun(ctx, old.ID)
	must(t, err)
	if got.TraceParent != "" || got.Request != "q" {
		t.Fatalf("old run after migration: trace_parent %q request %q, want none and %q", got.TraceParent, got.Request, "q")
	}
	tp := run.NewTraceParent()
	created, _, err := s.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "ses_1", Owner: "alice", Agent: "research", Request: "q2", TraceParent: tp})
	must(t, err)
	if created.TraceParent != tp {
		t.Fatalf("new run: trace_parent %q, want %q", created.TraceParent, tp)
	}
}
