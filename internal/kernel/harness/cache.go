package harness

import (
	"sync"

	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
)

// runCache keeps, for the runs this Harness stepped last, what a Step
// rebuilt from the store — the transcript, its view, the plan items — so
// that the next Step of the same run on this worker need not read every
// checkpoint and plan item again. Rebuilding made a Step's start cost grow
// with the run's length: at 100,000 iterations it read 100,000 checkpoints.
//
// An entry is only a shortcut, never a source of truth: it is used only
// when the run's log head (LastSeq) is the one the entry's Step left
// behind. Every write to a run's records appends to its log in the same
// commit (a Step's first commit carries lease_acquired; decisions, inputs
// and cancels append their events), so an unchanged head means nothing was
// written since, by this worker or any other. A Step takes its run's entry
// out and puts it back when it ends cleanly: two Steps never share one.
type runCache struct {
	mu      sync.Mutex
	max     int
	entries map[string]*cachedRun
	order   []string // oldest first, for eviction
}

type cachedRun struct {
	lastSeq   int64 // the run's log head when the entry was put
	cpID      string
	cpSeq     int64
	wsVersion string
	msgs      []model.Message
	view      transcriptView
	items     map[string]run.PlanItem
	inherited map[string]run.PlanItem
	nextOrder int64
}

// defaultCacheRuns bounds the entries: enough for the runs one worker steps
// at once (keel dev under load), few enough that their transcripts stay a
// small part of memory.
const defaultCacheRuns = 1024

func newRunCache(max int) *runCache {
	if max < 0 {
		return nil
	}
	if max == 0 {
		max = defaultCacheRuns
	}
	return &runCache{max: max, entries: map[string]*cachedRun{}}
}

// take removes and returns runID's entry if it is current for a run whose
// log head is lastSeq.
func (c *runCache) take(runID string, lastSeq int64, checkpointID string) *cachedRun {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[runID]
	if !ok {
		return nil
	}
	delete(c.entries, runID)
	if e.lastSeq != lastSeq || e.cpID != checkpointID {
		return nil
	}
	return e
}

func (c *runCache) put(runID string, e *cachedRun) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[runID]; !ok {
		c.order = append(c.order, runID)
	}
	c.entries[runID] = e
	for len(c.entries) > c.max && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		if old != runID {
			delete(c.entries, old)
		} else {
			c.order = append(c.order, old)
		}
	}
	if len(c.order) > 2*c.max {
		// Ids of entries taken since: drop them from the queue.
		live := c.order[:0]
		for _, id := range c.order {
			if _, ok := c.entries[id]; ok {
				live = append(live, id)
			}
		}
		c.order = live
	}
}

// resume is what readRun would rebuild for the Step's run, when the cache
// holds it current.
func (c *runCache) resume(e *env) (transcript, plan, cursor, bool) {
	en := c.take(e.run.ID, e.run.LastSeq, e.run.CheckpointID)
	if en == nil {
		return transcript{}, plan{}, cursor{}, false
	}
	tr := transcript{msgs: en.msgs, view: en.view, red: e.red}
	// This worker wrote the run's last records: under its own version.
	cur := cursorAt(e.run, run.Checkpoint{ID: en.cpID, Seq: en.cpSeq, WorkspaceVersion: en.wsVersion}, tr.size(), e.agent.Version)
	return tr, plan{items: en.items, inherited: en.inherited, next: en.nextOrder}, cur, true
}

// keep keeps the Step's values for the run's next Step, when everything
// they hold is committed. Only what the next model call needs is kept:
// the entry is bounded by the agent's context window, not by the run's
// length.
func (c *runCache) keep(e *env, tr *transcript, pl *plan, cur *cursor, pend *pending) {
	if cur.msgs != tr.size() || !pend.empty() || !pl.loaded() || pend.status.Terminal() {
		return
	}
	tr.trim(cur.msgs, true)
	c.put(e.run.ID, &cachedRun{lastSeq: cur.head, cpID: cur.checkpoint, cpSeq: cur.seq, wsVersion: cur.workspace, msgs: tr.msgs,
		view: tr.view, items: pl.live(tr.openCalls()), inherited: pl.inherited, nextOrder: pl.next})
}
