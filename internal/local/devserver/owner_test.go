package devserver

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
)

// TestTaskLeaseEndedAtRestart is issue #32 item 5: a task child's lease
// is ended by the next keel dev at start, as its parent's is, instead of
// holding its run until the lease runs out.
func TestTaskLeaseEndedAtRestart(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "k.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, _, err := st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "s", Owner: "o", Agent: "a", Request: "x",
		InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AcquireLease(ctx, r.ID, taskOwner(ownerPrefix+"1-dead"), time.Hour); err != nil {
		t.Fatal(err)
	}
	n, err := st.ExpireLeases(ctx, ownerPrefix, ownerPrefix+"2-next")
	if err != nil || n != 1 {
		t.Fatalf("ended %d leases (%v), want the task's", n, err)
	}
	if _, err := st.AcquireLease(ctx, r.ID, ownerPrefix+"2-next", time.Minute); err != nil {
		t.Fatalf("the next keel dev cannot take the run: %v", err)
	}
}
