package states

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// Lambda invocations at once. Unbounded, every execution of a burst runs
// its Lambda at the same time; in one process (keel dev) they then share
// the cores and the store's single writer, whose queue holds a write of
// each, so every write waits for all the others (Little's law): with a
// thousand runs created at once, an approved run took seconds to finish
// because the new runs' first steps were in the queue before it. A bound
// (Config.MaxInvocations) keeps that queue short, and a free slot goes to
// the waiting execution that started first: work in progress finishes
// before new work starts, and no execution waits behind one younger.

// slots hands out n slots, oldest waiter first.
type slots struct {
	mu      sync.Mutex
	free    int
	waiting waiters
	seq     uint64
}

func newSlots(n int) *slots { return &slots{free: n} }

type waiter struct {
	start time.Time // the execution's start: the older, the sooner
	seq   uint64    // arrival, between executions started together
	ready chan struct{}
	index int
}

type waiters []*waiter

func (w waiters) Len() int { return len(w) }
func (w waiters) Less(i, j int) bool {
	if !w[i].start.Equal(w[j].start) {
		return w[i].start.Before(w[j].start)
	}
	return w[i].seq < w[j].seq
}
func (w waiters) Swap(i, j int) {
	w[i], w[j] = w[j], w[i]
	w[i].index, w[j].index = i, j
}
func (w *waiters) Push(x any) {
	it := x.(*waiter)
	it.index = len(*w)
	*w = append(*w, it)
}
func (w *waiters) Pop() any {
	old := *w
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*w = old[:len(old)-1]
	it.index = -1
	return it
}

// acquire waits for a slot for an execution started at start, or for ctx.
// A nil *slots is unbounded.
func (s *slots) acquire(ctx context.Context, start time.Time) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	if s.free > 0 && len(s.waiting) == 0 {
		s.free--
		s.mu.Unlock()
		return nil
	}
	s.seq++
	w := &waiter{start: start, seq: s.seq, ready: make(chan struct{})}
	heap.Push(&s.waiting, w)
	s.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		if w.index < 0 {
			// Handed a slot as ctx ended: give it on.
			s.releaseLocked()
		} else {
			heap.Remove(&s.waiting, w.index)
		}
		return ctx.Err()
	}
}

// release frees a slot taken by acquire.
func (s *slots) release() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.releaseLocked()
	s.mu.Unlock()
}

func (s *slots) releaseLocked() {
	if len(s.waiting) > 0 {
		w := heap.Pop(&s.waiting).(*waiter)
		close(w.ready)
		return
	}
	s.free++
}
