package demo_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/local/demo"
	"github.com/keelrun/keel/internal/testbin"
)

// TestDemoEndToEnd drives keel dev as a child process over HTTP through the
// whole research run, including a SIGKILL after the destination accepted
// the publication and a restart, and checks there is exactly one
// publication and a log that explains the recovery.
func TestDemoEndToEnd(t *testing.T) {
	keel, pub := testbin.Keel(t), testbin.Pubserver(t)
	for _, spill := range []bool{false, true} {
		t.Run(map[bool]string{false: "in the server", true: "analysis spilled to the task"}[spill], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var out bytes.Buffer
			res, err := demo.Run(ctx, demo.Config{Keel: keel, PubServer: pub, Dir: t.TempDir(), Out: &out, Spill: spill})
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if !res.Killed || res.Status != run.StatusCompleted || res.Publications != 1 {
				t.Fatalf("killed=%v status=%s publications=%d\n%s", res.Killed, res.Status, res.Publications, out.String())
			}
			counts := map[run.EventType]int{}
			for i, ev := range res.Events {
				if ev.Seq != int64(i+1) {
					t.Fatalf("event %d has seq %d", i, ev.Seq)
				}
				counts[ev.Type]++
			}
			if counts[run.EventOpIntent] != 1 || counts[run.EventOpReconciled] != 1 || counts[run.EventOpSucceeded] != 0 ||
				counts[run.EventApprovalGranted] != 1 || counts[run.EventRunCompleted] != 1 {
				t.Fatalf("event counts %v", counts)
			}
			if spill && counts[run.EventRunSpilled] != 1 {
				t.Fatalf("no run_spilled event: %v", counts)
			}
		})
	}
}
