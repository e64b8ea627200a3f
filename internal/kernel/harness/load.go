package harness

// Reading a run back at the start of a Step: the transcript from its
// checkpoint chain (following forks), the plan items, or the worker's cache.

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// readRun rebuilds what a Step starts from out of the store: the
// transcript from the checkpoint chain (following forks), the cursor at
// its last checkpoint, and the plan items, the run's own and those of the
// runs it forked from. The cursor is returned as far as it was read even
// when reading failed after the chain (the Step's span names its
// checkpoint).
func readRun(ctx context.Context, e *env) (transcript, plan, cursor, error) {
	r := e.run
	msgs, cp, records, err := chain(ctx, e, r.ID, r.CheckpointID, 0)
	if err != nil {
		return transcript{}, plan{}, startCursor(r), err
	}
	if r.ParentRunID != "" && r.CheckpointID == "" {
		msgs, cp, _, err = chain(ctx, e, r.ParentRunID, r.ForkCheckpointID, 1)
		if err != nil {
			return transcript{}, plan{}, startCursor(r), err
		}
		cp.Seq = 0
	}
	if cp.ID == "" && r.ParentRunID != "" {
		cp.ID = r.ForkCheckpointID
	}
	tr, cur := transcript{msgs: msgs, red: e.red}, cursorAt(r, cp, len(msgs), records)
	items, err := e.opt.Store.ListPlanItems(ctx, r.ID)
	if err != nil {
		return tr, plan{}, cur, err
	}
	var inherited []run.PlanItem // nearest fork first
	for parent, depth := r.ParentRunID, 0; parent != "" && depth < 32; depth++ {
		pitems, err := e.opt.Store.ListPlanItems(ctx, parent)
		if err != nil {
			return tr, plan{}, cur, err
		}
		inherited = append(inherited, pitems...)
		pr, err := e.opt.Store.GetRun(ctx, parent)
		if err != nil {
			return tr, plan{}, cur, err
		}
		parent = pr.ParentRunID
	}
	return tr, newPlan(items, inherited), cur, nil
}

// chain returns the transcript up to checkpoint upTo of runID (all of it
// when upTo is empty), following forks to their parents, with its last
// checkpoint and, for the Step's own run, the last agent version its
// checkpoints name.
func chain(ctx context.Context, e *env, runID, upTo string, depth int) (msgs []model.Message, last run.Checkpoint, records string, err error) {
	if depth > 32 {
		return nil, run.Checkpoint{}, "", errors.New("fork chain deeper than 32")
	}
	r := e.run
	if runID != e.run.ID {
		if r, err = e.opt.Store.GetRun(ctx, runID); err != nil {
			return nil, run.Checkpoint{}, "", err
		}
	}
	if r.ParentRunID != "" {
		if msgs, last, _, err = chain(ctx, e, r.ParentRunID, r.ForkCheckpointID, depth+1); err != nil {
			return nil, run.Checkpoint{}, "", err
		}
	}
	if upTo == "" && runID == e.run.ID && e.run.CheckpointID == "" {
		return msgs, last, "", nil
	}
	var after int64
	for {
		page, err := e.opt.Store.ListCheckpoints(ctx, runID, after, 1000)
		if err != nil {
			return nil, run.Checkpoint{}, "", err
		}
		for _, cp := range page {
			st, err := readState(ctx, e.opt.Artifacts, cp)
			if err != nil {
				return nil, run.Checkpoint{}, "", err
			}
			msgs = append(msgs, st.Messages...)
			last = cp
			if st.AgentVersion != "" && runID == e.run.ID {
				records = st.AgentVersion
			}
			if cp.ID == upTo {
				return msgs, last, records, nil
			}
		}
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].Seq
	}
	if upTo != "" {
		return nil, run.Checkpoint{}, "", fmt.Errorf("checkpoint %s of run %s: %w", upTo, runID, store.ErrNotFound)
	}
	return msgs, last, records, nil
}
