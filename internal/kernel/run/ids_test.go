package run

import (
	"regexp"
	"sort"
	"strconv"
	"testing"
	"time"
)

func TestNewID(t *testing.T) {
	re := regexp.MustCompile(`^run_([0-9a-f]{12})([0-9a-f]{16})$`)
	before := time.Now().UnixMilli()
	id := NewID("run")
	after := time.Now().UnixMilli()
	m := re.FindStringSubmatch(id)
	if m == nil {
		t.Fatalf("NewID = %q, want run_ + 12 hex (ms) + 16 hex (random)", id)
	}
	ms, err := strconv.ParseInt(m[1], 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	if ms < before || ms > after {
		t.Fatalf("time part %d is outside [%d, %d]", ms, before, after)
	}
}

func TestNewIDPrefixes(t *testing.T) {
	for _, p := range []string{"run", "op", "ap", "cp", "in", ""} {
		t.Run("prefix="+p, func(t *testing.T) {
			id := NewID(p)
			if !regexp.MustCompile(`^` + regexp.QuoteMeta(p) + `_[0-9a-f]{28}$`).MatchString(id) {
				t.Fatalf("NewID(%q) = %q", p, id)
			}
		})
	}
}

func TestNewIDUniqueAndOrdered(t *testing.T) {
	const n = 10000
	seen := make(map[string]bool, n)
	ids := make([]string, 0, n)
	for range n {
		id := NewID("x")
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
		ids = append(ids, id)
	}
	// Ids made in different milliseconds sort by creation time: compare the
	// time parts, which never go backwards on one machine.
	for i := 1; i < n; i++ {
		if ids[i][2:14] < ids[i-1][2:14] {
			t.Fatalf("time part went backwards: %s after %s", ids[i], ids[i-1])
		}
	}
	if !sort.StringsAreSorted([]string{ids[0][:14], ids[n-1][:14]}) {
		t.Fatal("first and last ids out of order")
	}
}

func TestCheckpointIDSeq(t *testing.T) {
	for _, seq := range []int64{0, 1, 2, 255, 1 << 20, 1<<32 - 1} {
		id := NewCheckpointID(seq)
		if !regexp.MustCompile(`^cp_[0-9a-f]{28}$`).MatchString(id) {
			t.Fatalf("NewCheckpointID(%d) = %q, want NewID's form", seq, id)
		}
		if got, ok := CheckpointIDSeq(id); !ok || got != seq {
			t.Fatalf("CheckpointIDSeq(%q) = %d, %v, want %d", id, got, ok, seq)
		}
	}
	if a, b := NewCheckpointID(7), NewCheckpointID(7); a == b {
		t.Fatalf("two ids for seq 7 are both %s", a)
	}
	for _, id := range []string{"", "cp1", "cp_1", "run_0192a0b1c2d30000000700000000", "cp_0192a0b1c2d3000000070000000", "cp_0192A0B1C2D30000000700000000", "cp_0192a0b1c2d3zzzzzzzz00000000"} {
		if seq, ok := CheckpointIDSeq(id); ok {
			t.Errorf("CheckpointIDSeq(%q) = %d, true; want false", id, seq)
		}
	}
	// An older NewID of the form answers too: where to look, not what is there.
	if _, ok := CheckpointIDSeq(NewID("cp")); !ok {
		t.Error("CheckpointIDSeq refuses a NewID(\"cp\")")
	}
}
