package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckpointLookupsSeek: a lookup by checkpoint id goes to its row or
// seeks the partial index, never scans (SQLite only seeks an expression
// index, or the partial one, from terms of the right shape: see cpByRunID).
func TestCheckpointLookupsSeek(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "keel.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	args := []any{1, 2, []byte("0123456789"), "cp_x"}
	for name, q := range map[string]string{
		"exists":        qCheckpointExists,
		"GetCheckpoint": `SELECT ` + cpColumns + ` FROM checkpoints c WHERE ` + cpByRunID,
		"insert":        qCheckpointInsert,
	} {
		a := args
		if name == "insert" {
			a = append(args, 2, []byte("0123456789"), nil, nil, 1, nil, "", nil, 0, "", 0)
		}
		rows, err := s.DB().QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+q, a...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		all := strings.Join(plan, "; ")
		if strings.Contains(all, "SCAN c") || !strings.Contains(all, "checkpoints_id (id=?") || !strings.Contains(all, "PRIMARY KEY (rowid=?)") {
			t.Errorf("%s: plan %s, want a rowid search and a search of checkpoints_id", name, all)
		}
	}
}
