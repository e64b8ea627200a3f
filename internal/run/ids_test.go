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
