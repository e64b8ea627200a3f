package model_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/model"
)

// TestRateLimitCountersForgetIdleRuns: a long-lived process's counters hold
// the runs under pressure now, not every run it ever served.
func TestRateLimitCountersForgetIdleRuns(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c := model.NewRateLimitCounters()
	c.Now = func() time.Time { return now }
	for i := 0; i < 1000; i++ {
		c.Add(fmt.Sprintf("run_%d", i), "api.example")
	}
	if c.Runs() != 1000 || c.Run("run_7") != 1 {
		t.Fatalf("runs = %d, run_7 = %d", c.Runs(), c.Run("run_7"))
	}
	now = now.Add(30 * time.Minute)
	if n, _ := c.Add("run_7", "api.example"); n != 2 {
		t.Fatalf("run_7 = %d after a second 429, want 2", n)
	}
	now = now.Add(model.DefaultRunIdle + time.Minute)
	if n, ep := c.Add("run_new", "api.example"); n != 1 || ep != 1002 {
		t.Fatalf("counts %d, %d", n, ep)
	}
	if c.Runs() != 1 || c.Run("run_7") != 0 {
		t.Fatalf("after an idle hour: %d runs kept, run_7 = %d; want only run_new", c.Runs(), c.Run("run_7"))
	}
}
