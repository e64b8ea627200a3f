package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

func TestExpireLeasesOfDeadIncarnations(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "k.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mk := func(owner string) run.Run {
		r, _, err := st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "s", Owner: "o", Agent: "a", Request: "x", InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()})
		if err != nil {
			t.Fatal(err)
		}
		r, err = st.AcquireLease(ctx, r.ID, owner, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	dead := mk("keel-dev/boot-1")
	task := mk("keel-task/77")
	n, err := st.ExpireLeases(ctx, "keel-dev/", "keel-dev/boot-2")
	if err != nil || n != 1 {
		t.Fatalf("expired %d, %v", n, err)
	}
	r, err := st.AcquireLease(ctx, dead.ID, "keel-dev/boot-2", time.Minute)
	if err != nil || r.Lease.Token != dead.Lease.Token+1 {
		t.Fatalf("take over: %+v %v", r.Lease, err)
	}
	if _, err := st.AcquireLease(ctx, task.ID, "keel-dev/boot-2", time.Minute); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("another owner's lease was expired: %v", err)
	}
	// The dead incarnation's token is fenced.
	if _, err := st.Commit(ctx, store.Commit{RunID: dead.ID, Token: dead.Lease.Token}); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("stale token: %v", err)
	}
	if _, err := st.ExpireLeases(ctx, "keel-dev/", "other"); err == nil {
		t.Fatal("accepted a current owner outside the prefix")
	}
}
