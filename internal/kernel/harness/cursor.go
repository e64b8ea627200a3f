package harness

import (
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// cursor is where the last commit left the run: its checkpoint, the
// workspace version that checkpoint names, the agent version that wrote
// its records, how much of the transcript is durable, and the run's log
// head, steps and budget as the store has them. Only a commit moves it
// (pending.flush); everything else reads it.
type cursor struct {
	checkpoint string // the last checkpoint's id ("" none; a fork's parent checkpoint before its first)
	seq        int64  // its sequence number in the run
	workspace  string // the workspace version it names
	// records is the agent version that wrote the run's records, as its
	// checkpoints say ("" when none says: see recordsVersion); said: this
	// Step's first checkpoint, which names the version running it, is
	// written.
	records string
	said    bool
	msgs    int   // transcript messages the store has (absolute, see transcript)
	head    int64 // the run's log head (run.Run.LastSeq): what the cache checks
	steps   int64
	budget  run.Budget
}

// startCursor is the cursor of run r as a Step finds it, before its
// checkpoints are read.
func startCursor(r run.Run) cursor {
	return cursor{head: r.LastSeq, steps: r.StepCount, budget: r.Budget}
}

// cursorAt is run r's cursor at its checkpoint cp (the zero one: none),
// with msgs transcript messages durable and records the agent version
// its checkpoints name.
func cursorAt(r run.Run, cp run.Checkpoint, msgs int, records string) cursor {
	c := startCursor(r)
	c.checkpoint, c.seq, c.workspace, c.msgs, c.records = cp.ID, cp.Seq, cp.WorkspaceVersion, msgs, records
	return c
}

// recordsVersion is the version that wrote the run's records: the last
// checkpoint that names one, else created, the version the run was
// created under.
func (c *cursor) recordsVersion(created string) string {
	if c.records != "" {
		return c.records
	}
	return created
}

// nextCheckpoint is the identity of the checkpoint after this one.
func (c *cursor) nextCheckpoint() (id string, seq int64, parent string) {
	return run.NewCheckpointID(c.seq + 1), c.seq + 1, c.checkpoint
}

// inUse is what the run has used and reserved of its budget with pend,
// what the next commit adds, counted too: what a limit is checked against.
func (c *cursor) inUse(pend store.Amounts) store.Amounts {
	b := c.budget
	return store.Amounts{Tokens: b.TokensUsed + b.TokensReserved + pend.Tokens,
		SpendMicroUSD: b.SpendUsedMicroUSD + b.SpendReservedMicroUSD + pend.SpendMicroUSD,
		ToolCalls:     b.ToolCallsUsed + b.ToolCallsReserved + pend.ToolCalls}
}

// advance moves the cursor past a commit that wrote up to transcript
// position msgs, the log entries seqs, checkpoint cp (nil: none) and
// steps and used of the run's budget.
func (c *cursor) advance(seqs []int64, cp *run.Checkpoint, msgs int, steps int64, used store.Amounts) {
	if len(seqs) > 0 {
		c.head = seqs[len(seqs)-1]
	}
	c.msgs = msgs
	if cp != nil {
		c.said = true
		c.checkpoint, c.seq = cp.ID, cp.Seq
		c.workspace = cp.WorkspaceVersion
	}
	c.steps += steps
	c.budget.TokensUsed += used.Tokens
	c.budget.SpendUsedMicroUSD += used.SpendMicroUSD
	c.budget.ToolCallsUsed += used.ToolCalls
}
