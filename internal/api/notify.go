package api

import "sync"

// Notifier tells live event streams that a run's log may have grown, so
// they read the store at once instead of polling it. Subscribe returns a
// channel that receives (coalesced: a buffer of one) after each such
// change, and a function that ends the subscription. A notifier may miss
// changes (another process's commits): streams still poll, at
// Deps.PollInterval.
type Notifier interface {
	Subscribe(runID string) (<-chan struct{}, func())
}

// Broadcaster is an in-process [Notifier]: whoever commits calls Notify
// (in `keel dev`, the SQLite store after each transaction that appended
// events). The zero value is ready to use; it is safe for concurrent use.
type Broadcaster struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

var _ Notifier = (*Broadcaster)(nil)

// Subscribe implements [Notifier].
func (b *Broadcaster) Subscribe(runID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	if b.subs == nil {
		b.subs = map[string]map[chan struct{}]struct{}{}
	}
	if b.subs[runID] == nil {
		b.subs[runID] = map[chan struct{}]struct{}{}
	}
	b.subs[runID][ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		delete(b.subs[runID], ch)
		if len(b.subs[runID]) == 0 {
			delete(b.subs, runID)
		}
		b.mu.Unlock()
	}
}

// Notify wakes every stream of runID. It never blocks.
func (b *Broadcaster) Notify(runID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs[runID] {
		select {
		case ch <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}
