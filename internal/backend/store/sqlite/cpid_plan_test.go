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
	lookup := []any{1, 2, []byte("0123456789"), "cp_x"}
	for _, c := range []struct {
		name, query string
		args        []any
		want        []string
	}{
		{"GetCheckpoint", `SELECT ` + cpColumns + ` FROM checkpoints c WHERE ` + cpByRunID, lookup, []string{"PRIMARY KEY (rowid=?)", "checkpoints_id (id=?"}},
		{"at its row", qCheckpointAtRow, []any{1<<32 | 2, []byte("0123456789")}, []string{"PRIMARY KEY (rowid=?)"}},
		{"in the index", qCheckpointInIndex, []any{"cp_x", 1}, []string{"checkpoints_id (id=?"}},
	} {
		name := c.name
		rows, err := s.DB().QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+c.query, c.args...)
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
		if strings.Contains(all, "SCAN c") {
			t.Errorf("%s: plan %s scans", name, all)
		}
		for _, w := range c.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: plan %s, want %s", name, all, w)
			}
		}
	}
}
