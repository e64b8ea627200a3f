package sqlite_test

import (
	"context"
	"errors"
	"testing"
)

// BenchmarkRunSignals is the read a step makes before each tool call, with
// the cancellable context a step has.
//
//	go test -run '^$' -bench RunSignals ./internal/backend/store/sqlite
func BenchmarkRunSignals(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, r := leasedRun(b)
	for b.Loop() {
		if _, err := s.RunSignals(ctx, r.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRunSignalsCancelled: a cancelled context is refused before the read,
// and a cancel request is seen by the next read.
func TestRunSignalsCancelled(t *testing.T) {
	ctx := context.Background()
	s, r := leasedRun(t)
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.RunSignals(done, r.ID); !errors.Is(err, context.Canceled) {
		t.Fatalf("RunSignals with a cancelled context: %v", err)
	}
	_, _, err := s.RequestCancel(ctx, r.ID, "alice")
	must(t, err)
	sig, err := s.RunSignals(ctx, r.ID)
	must(t, err)
	if !sig.CancelRequested {
		t.Fatalf("signals after a cancel request: %+v", sig)
	}
}
