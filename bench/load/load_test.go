package main

import (
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/kernel/run"
)

// A small load: every run is approved and completes, each step commit is
// counted, and the commits of concurrent runs share transactions (never
// more transactions than writes).
func TestLoadSmoke(t *testing.T) {
	res, err := Run(t.Context(), Config{N: 10, Clients: 4, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 10 || res.StatusCounts[run.StatusCompleted] != 10 {
		t.Fatalf("completed %d of 10: %v", res.Completed, res.StatusCounts)
	}
	if res.StepCommits < 10 || res.CommitFailures != 0 {
		t.Fatalf("%d step commits, %d failed", res.StepCommits, res.CommitFailures)
	}
	if res.Transactions < 1 || res.Transactions > res.Writes || res.BytesPerRun <= 0 {
		t.Fatalf("%d transactions for %d writes, %d bytes per run", res.Transactions, res.Writes, res.BytesPerRun)
	}
	// Each run puts two artifacts (the report, the audit head), each of
	// them at least one fsync'd directory.
	if res.ArtifactFsyncsPerRun < 2 {
		t.Fatalf("%.2f artifact fsyncs per run: the fs store's count is not reaching the result", res.ArtifactFsyncsPerRun)
	}
	t.Logf("%.1f runs/s, approval→completed p99 %.0f ms, %.3f fsyncs per step commit", res.RunsPerSecond, res.ApprovalP99Ms, res.FsyncsPerStep)
}

// Bad configuration is refused naming the flag, before any server starts.
func TestLoadRejects(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		flag string
	}{
		{Config{N: 0}, "-n:"},
		{Config{N: 1, MaxBatch: -1}, "-max-batch:"},
	} {
		if _, err := Run(t.Context(), tc.cfg); err == nil || !strings.HasPrefix(err.Error(), tc.flag) {
			t.Errorf("%+v: error %v, want one naming %s", tc.cfg, err, tc.flag)
		}
	}
}
