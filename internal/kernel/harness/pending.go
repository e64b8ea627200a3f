package harness

// What the next commit of a Step writes, gathered as the Step goes: the
// events, plan items, usage and run patch. commit.go writes it.

import (
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// records is what the next commit writes besides the checkpoint.
type records struct {
	events   []run.Event
	items    map[string]run.PlanItem // by id
	itemIDs  []string
	used     store.Amounts
	released store.Amounts
	steps    int64
	consume  []string
	patch    store.RunPatch
}

func (r *records) empty() bool {
	return len(r.events) == 0 && len(r.items) == 0 && r.steps == 0 && len(r.consume) == 0 &&
		r.patch == (store.RunPatch{}) && r.used == (store.Amounts{}) && r.released == (store.Amounts{})
}

// pending is the Step's next commit: what it will write, and the one way
// anything of the Step is written (commit.go). Rule 2 of the package,
// one commit per iteration, holds because nothing else calls
// Store.Commit. The transcript's messages past the cursor are its
// checkpoint; every item it records is the plan's from then on; the
// cursor moves when it is written.
type pending struct {
	e   *env
	tr  *transcript // read: its messages past the cursor are the next checkpoint
	pl  *plan       // each recorded item is put here
	cur *cursor     // moved by each commit
	ws  *runWorkspace

	token  int64      // the lease the commit is written under; -1 once a commit released it
	status run.Status // the run's status as the next commit leaves it
	// fresh holds the run's signals as the last commit left them, when the
	// store reports them (signalCommitter): the next iteration uses them
	// instead of reading its own.
	fresh *store.RunSignals
	rec   records
}

// closing reports the event types that end a turn or a run.
func closing(t run.EventType) bool {
	switch t {
	case run.EventTurnCompleted, run.EventRunCompleted, run.EventRunFailed, run.EventRunCancelled, run.EventRunNeedsHuman:
		return true
	}
	return false
}

func (p *pending) empty() bool { return p.rec.empty() }

// drop forgets what is not written: the run ends over the last commit.
func (p *pending) drop() { p.rec = records{} }

func (p *pending) event(e run.Event) {
	if e.Time.IsZero() {
		e.Time = p.e.opt.Clock()
	}
	e.Data = p.e.red.bytes(e.Data)
	p.rec.events = append(p.rec.events, e)
}

// item records it, and makes it its call's item in the plan.
func (p *pending) item(it run.PlanItem) {
	it.UpdatedAt = p.e.opt.Clock()
	it.Result = p.e.red.bytes(it.Result)
	if p.rec.items == nil {
		p.rec.items = map[string]run.PlanItem{}
	}
	if _, ok := p.rec.items[it.ID]; !ok {
		p.rec.itemIDs = append(p.rec.itemIDs, it.ID)
	}
	p.rec.items[it.ID] = it
	p.pl.put(it)
}

func (p *pending) setStatus(st run.Status) {
	if p.status == st {
		return
	}
	p.status = st
	p.rec.patch.Status = st
}

// releaseLease: the commit ends the Step's lease (the run waits, or ended).
func (p *pending) releaseLease() { p.rec.patch.ReleaseLease = true }

// setError is the run's error as the commit leaves it.
func (p *pending) setError(msg string) { p.rec.patch.Error = &msg }

// setOutput is the run's output as the commit leaves it.
func (p *pending) setOutput(out string) { p.rec.patch.Output = &out }

// raiseLimits raises the run's limits by delta.
func (p *pending) raiseLimits(delta run.Limits) { p.rec.patch.RaiseLimits = delta }

// use adds to what the run used.
func (p *pending) use(a store.Amounts) {
	p.rec.used.Tokens += a.Tokens
	p.rec.used.SpendMicroUSD += a.SpendMicroUSD
	p.rec.used.ToolCalls += a.ToolCalls
}

// release gives back what the store reserved for a call.
func (p *pending) release(a store.Amounts) {
	p.rec.released.Tokens += a.Tokens
	p.rec.released.SpendMicroUSD += a.SpendMicroUSD
	p.rec.released.ToolCalls += a.ToolCalls
}

// step counts a model call.
func (p *pending) step() { p.rec.steps++ }

// consume marks queued inputs taken.
func (p *pending) consume(ids []string) { p.rec.consume = append(p.rec.consume, ids...) }

// used is what the commit adds to the run's use.
func (p *pending) used() store.Amounts { return p.rec.used }

// steps is how many model calls the commit counts.
func (p *pending) steps() int64 { return p.rec.steps }

// room is how many more records (events, items, inputs) the commit can
// hold with reserve kept for what it writes besides them.
func (p *pending) room(reserve int) int {
	return store.MaxItemsPerCommit - reserve - len(p.rec.events) - len(p.rec.itemIDs) - len(p.rec.consume)
}
