package states

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// waitQueued waits until n callers wait in s (a deadlock detector, not a
// timing bound).
func waitQueued(t *testing.T, s *slots, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		got := len(s.waiting)
		s.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters, want %d", got, n)
		}
	}
}

// A free slot goes to the waiter whose execution started first, whatever
// the order they came in; one that gives up leaves the queue without
// taking a slot.
func TestSlotsOldestFirst(t *testing.T) {
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		starts []int // minutes after base, in arrival order
		cancel int   // index of a waiter that gives up, or -1
		want   []int // the starts in the order they get the slot
	}{
		{"by start", []int{3, 1, 2}, -1, []int{1, 2, 3}},
		{"same start: by arrival", []int{5, 5, 4}, -1, []int{4, 5, 5}},
		{"one gives up", []int{3, 1, 2}, 1, []int{2, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSlots(1)
			if err := s.acquire(t.Context(), base); err != nil {
				t.Fatal(err)
			}
			got := make(chan int, len(tc.starts))
			errs := make(chan error, len(tc.starts))
			queued := 0
			var wg sync.WaitGroup
			for i, m := range tc.starts {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				wg.Go(func() {
					if err := s.acquire(ctx, base.Add(time.Duration(m)*time.Minute)); err != nil {
						errs <- err
						return
					}
					got <- m
					s.release()
				})
				queued++
				waitQueued(t, s, queued)
				if i == tc.cancel {
					cancel()
					if err := <-errs; !errors.Is(err, context.Canceled) {
						t.Fatalf("cancelled waiter: %v", err)
					}
					queued--
					waitQueued(t, s, queued)
				}
			}
			s.release()
			for i, w := range tc.want {
				if m := <-got; m != w {
					t.Fatalf("slot %d went to start %d, want %d", i, m, w)
				}
			}
			wg.Wait() // the last holder has released its slot
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.free != 1 || len(s.waiting) != 0 {
				t.Fatalf("free %d, waiting %d after all released: want 1 and 0", s.free, len(s.waiting))
			}
		})
	}
}
