package harness

import (
	"testing"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

func TestCursorRecordsVersion(t *testing.T) {
	cases := []struct {
		name, records, created, want string
	}{
		{"a checkpoint named it", "v2", "v1", "v2"},
		{"none did: the run's own", "", "v1", "v1"},
		{"a run from before versions", "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cursor{records: tc.records}
			if got := c.recordsVersion(tc.created); got != tc.want {
				t.Fatalf("recordsVersion %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCursorAdvance(t *testing.T) {
	start := startCursor(run.Run{LastSeq: 7, StepCount: 3, Budget: run.Budget{TokensUsed: 10, TokensReserved: 5, SpendUsedMicroUSD: 1,
		ToolCallsUsed: 2, ToolCallsReserved: 1}})
	start.checkpoint, start.seq, start.workspace = "cp_a", 4, "ws_a"
	cp := &run.Checkpoint{ID: "cp_b", Seq: 5, WorkspaceVersion: "ws_b"}
	cases := []struct {
		name  string
		seqs  []int64
		cp    *run.Checkpoint
		steps int64
		used  store.Amounts
		want  cursor
	}{
		{"nothing written but usage", nil, nil, 0, store.Amounts{Tokens: 4},
			cursor{checkpoint: "cp_a", seq: 4, workspace: "ws_a", msgs: 9, head: 7, steps: 3,
				budget: run.Budget{TokensUsed: 14, TokensReserved: 5, SpendUsedMicroUSD: 1, ToolCallsUsed: 2, ToolCallsReserved: 1}}},
		{"a step with a checkpoint", []int64{8, 9, 10}, cp, 1, store.Amounts{Tokens: 1, SpendMicroUSD: 2, ToolCalls: 3},
			cursor{checkpoint: "cp_b", seq: 5, workspace: "ws_b", said: true, msgs: 9, head: 10, steps: 4,
				budget: run.Budget{TokensUsed: 11, TokensReserved: 5, SpendUsedMicroUSD: 3, ToolCallsUsed: 5, ToolCallsReserved: 1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := start
			c.advance(tc.seqs, tc.cp, 9, tc.steps, tc.used)
			if c != tc.want {
				t.Fatalf("advanced to %+v, want %+v", c, tc.want)
			}
		})
	}
}

func TestCursorNextCheckpointAndUse(t *testing.T) {
	c := cursor{checkpoint: "cp_x", seq: 41, budget: run.Budget{TokensUsed: 1, TokensReserved: 2, SpendUsedMicroUSD: 3,
		SpendReservedMicroUSD: 4, ToolCallsUsed: 5, ToolCallsReserved: 6}}
	if id, seq, parent := c.nextCheckpoint(); seq != 42 || parent != "cp_x" {
		t.Fatalf("nextCheckpoint %s %d %s", id, seq, parent)
	} else if n, ok := run.CheckpointIDSeq(id); !ok || n != 42 {
		t.Fatalf("nextCheckpoint %s %d %s", id, seq, parent)
	}
	cases := []struct {
		name string
		pend store.Amounts
		want store.Amounts
	}{
		{"nothing pending", store.Amounts{}, store.Amounts{Tokens: 3, SpendMicroUSD: 7, ToolCalls: 11}},
		{"pending use counts", store.Amounts{Tokens: 10, SpendMicroUSD: 20, ToolCalls: 30}, store.Amounts{Tokens: 13, SpendMicroUSD: 27, ToolCalls: 41}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.inUse(tc.pend); got != tc.want {
				t.Fatalf("inUse %+v, want %+v", got, tc.want)
			}
		})
	}
}
