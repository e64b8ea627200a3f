package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/testbin"
)

// TestSmoke runs the driver at N=10 on every system: the Keel and floor
// rows must be measured (real harness, real SQLite, child processes);
// LangGraph.js and Temporal run where `make bench-peers` installed them
// and are otherwise rows that say why they were skipped.
func TestSmoke(t *testing.T) {
	testbin.SkipShort(t, "builds the Keel and floor drivers and runs them as child processes")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := Run(context.Background(), Options{Ns: []int{10}, Systems: []string{"floor", "keel", "langgraph", "temporal"},
		Root: root, Work: t.TempDir(), Temporal: filepath.Join(root, "bin", "temporal"), Node: "node", Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4: %+v", len(rows), rows)
	}
	var out strings.Builder
	Print(&out, rows)
	t.Logf("\n%s", out.String())
	for _, r := range rows {
		switch {
		case r.System == "floor" || r.System == "keel":
			if r.Skipped != "" || r.MSPerStep <= 0 || r.StoreBytes <= 0 || r.PeakRSSBytes <= 0 || r.RatioToFloor <= 0 {
				t.Errorf("%s row not measured: %+v", r.System, r)
			}
		case r.Skipped != "":
			if strings.HasPrefix(r.Skipped, "failed") {
				t.Errorf("%s is installed but failed: %s", r.System, r.Skipped)
			} else {
				t.Logf("%s skipped: %s", r.System, r.Skipped)
			}
		case r.MSPerStep <= 0 || r.StoreBytes <= 0:
			t.Errorf("%s row not measured: %+v", r.System, r)
		}
	}
	if !strings.Contains(out.String(), "keel") || !strings.Contains(out.String(), "× floor") {
		t.Errorf("table:\n%s", out.String())
	}
}
