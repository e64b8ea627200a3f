package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// Commit implements store.Committer with one TransactWriteItems; see the
// package doc. The store fills in what the SQLite backend fills in: event
// seqs and zero times, args hashes, idempotency keys, the checkpoint's Seq
// (previous + 1 when zero), Size and StateHash.
//
// Parts that DynamoDB cannot express as "do nothing if …" inside a
// transaction are resolved by retrying without them: an operation or
// approval intent that exists with the same content, and a cancel of an
// approval that is no longer pending. Each such retry follows a failed
// transaction, so nothing is written twice.
func (s *Store) Commit(ctx context.Context, c store.Commit) ([]int64, error) {
	if err := store.ValidateCommit(&c); err != nil {
		return nil, err
	}
	if n := commitPayload(&c); n > maxTxPayload {
		return nil, invalid("commit carries %d bytes, over %d per DynamoDB transaction", n, maxTxPayload)
	}
	sp, err := s.spillCheckpoint(ctx, &c)
	if err != nil {
		return nil, err
	}

	skip := map[string]bool{} // "op:"/"ap:"/"cancel:" ids dropped from the transaction
	fresh := false
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		if err := backoff(ctx, attempt); err != nil {
			return nil, err
		}
		st, wasRead, err := s.state(ctx, c.RunID, fresh)
		if err != nil {
			return nil, err
		}
		fresh = false
		if wasRead && (st.token != c.Token || !st.leased) {
			return nil, fmt.Errorf("dynamo: commit to %q: %w (token %d, current %d, held %t)", c.RunID, store.ErrFenced, c.Token, st.token, st.leased)
		}
		if p := c.Run; p != nil && p.Status != "" {
			if err := run.Transition(st.status, p.Status); err != nil {
				if !wasRead {
					fresh = true // the cache may be behind: decide on the row itself
					continue
				}
				return nil, fmt.Errorf("dynamo: commit to %q: %w", c.RunID, err)
			}
		}
		if p := c.Run; p != nil && p.Status.Terminal() {
			// Read after st: the transaction's version condition on the
			// run row then holds the operations as read (every change of
			// an operation is a commit, which moves the version).
			if err := s.settled(ctx, &c); err != nil {
				if !wasRead && errors.Is(err, store.ErrUnsettled) {
					fresh = true // the fence decides first: read the row
					continue
				}
				return nil, err
			}
		}
		released := c.Released
		if wasRead {
			released = clampReleased(released, st.reserved)
		}
		tx := s.buildCommit(&c, st, released, sp, skip)
		err = s.transact(ctx, tx.items)
		if err == nil {
			s.afterCommit(&c, st, tx)
			return tx.seqs, nil
		}
		f, ok := asTxFailure(err)
		if !ok {
			return nil, fmt.Errorf("dynamo: commit to %q: %w", c.RunID, err)
		}
		if f.failed[0] {
			fresh = true // fenced, or ver / status / budget moved: the row decides
			continue
		}
		if len(f.failed) == 0 {
			if f.retryable {
				continue
			}
			return nil, fmt.Errorf("dynamo: commit to %q: %w", c.RunID, err)
		}
		for i := range f.failed {
			if err := s.explainCommitFailure(ctx, c.RunID, tx.parts[i], skip); err != nil {
				return nil, err
			}
		}
	}
	return nil, tooContended("commit", c.RunID)
}

// spillCheckpoint puts the state of c's checkpoint in the artifact store
// when it is over the spill threshold, before any attempt: the item then
// holds only its key (nil when nothing spilled).
func (s *Store) spillCheckpoint(ctx context.Context, c *store.Commit) (*spill, error) {
	cp := c.Checkpoint
	if cp == nil || s.artifacts == nil || len(cp.State) <= s.spill {
		return nil, nil
	}
	k := artifact.Key{RunID: c.RunID, CheckpointID: cp.ID, Name: "state." + cp.StateHash}
	info, err := s.artifacts.Put(ctx, k, cp.State)
	if err != nil {
		return nil, fmt.Errorf("dynamo: commit: spill checkpoint %q: %w", cp.ID, err)
	}
	return &spill{key: k, hash: info.SHA256}, nil
}

// clampReleased limits released to what the run row, as read, has
// reserved: releasing more than is reserved leaves zero, never negative.
func clampReleased(released, reserved store.Amounts) store.Amounts {
	return store.Amounts{Tokens: min(released.Tokens, reserved.Tokens),
		SpendMicroUSD: min(released.SpendMicroUSD, reserved.SpendMicroUSD),
		ToolCalls:     min(released.ToolCalls, reserved.ToolCalls)}
}

// settled refuses to end the run while one of its operations, as c would
// leave them, is pending or needs_human (store.ErrUnsettled).
func (s *Store) settled(ctx context.Context, c *store.Commit) error {
	if len(c.NewOperations) > 0 {
		return fmt.Errorf("dynamo: commit to %q: %w: operation %s is created pending, so the run cannot end %s", c.RunID, store.ErrUnsettled, c.NewOperations[0].ID, c.Run.Status)
	}
	outcome := make(map[string]run.OpStatus, len(c.OperationUpdates))
	for _, u := range c.OperationUpdates {
		outcome[u.ID] = u.Status
	}
	items, err := s.children(ctx, c.RunID, "OP#")
	if err != nil {
		return fmt.Errorf("dynamo: commit to %q: operations: %w", c.RunID, err)
	}
	for _, it := range items {
		id, st := it.s("id"), run.OpStatus(it.s("status"))
		if u, ok := outcome[id]; ok && st == run.OpPending {
			st = u
		}
		if st == run.OpPending || st == run.OpNeedsHuman {
			return fmt.Errorf("dynamo: commit to %q: %w: operation %s is %s, so the run cannot end %s", c.RunID, store.ErrUnsettled, id, st, c.Run.Status)
		}
	}
	return nil
}

// commitPayload estimates the bytes a commit puts on the wire.
func commitPayload(c *store.Commit) int {
	n := 0
	for _, e := range c.Events {
		n += len(e.Data) + 200
	}
	if cp := c.Checkpoint; cp != nil {
		n += len(cp.State) + 300
	}
	for _, pi := range c.PlanItems {
		n += len(pi.Args) + len(pi.Result) + 300
	}
	for _, op := range c.NewOperations {
		n += len(op.Args) + 300
	}
	for _, u := range c.OperationUpdates {
		n += len(u.Result) + len(u.Error) + 200
	}
	for _, a := range c.NewApprovals {
		n += len(a.Args) + len(a.TaskToken) + 300
	}
	if p := c.Run; p != nil {
		for _, t := range []*string{p.Output, p.Error, p.Command} {
			if t != nil {
				n += len(*t)
			}
		}
	}
	return n
}

// explainCommitFailure reads the item whose condition failed and returns
// the sentinel error it means, or nil after marking the part to be dropped
// from the next attempt (an intent that already exists unchanged, a cancel
// of an approval already decided).
func (s *Store) explainCommitFailure(ctx context.Context, runID string, p part, skip map[string]bool) error {
	switch p.kind {
	case "op_new":
		it, err := s.getItem(ctx, runPK(runID), opSK(p.id))
		if err != nil {
			return err
		}
		if it != nil && it.s("args_hash") == p.hash {
			skip["op:"+p.id] = true // the same intent again
			return nil
		}
		return fmt.Errorf("dynamo: commit: operation %q: %w: exists with other args", p.id, store.ErrConflict)
	case "ap_new":
		it, err := s.getItem(ctx, runPK(runID), approvalSK(p.id))
		if err != nil {
			return err
		}
		if it != nil && it.s("args_hash") == p.hash && it.s("tool") == p.tool {
			skip["ap:"+p.id] = true
			return nil
		}
		return fmt.Errorf("dynamo: commit: approval %q: %w: exists for other arguments", p.id, store.ErrConflict)
	case "ntf_new", "ntf_due":
		skip["ntf:"+p.id] = true // enqueued before: left as it is
		return nil
	case "op_update":
		it, err := s.getItem(ctx, runPK(runID), opSK(p.id))
		if err != nil {
			return err
		}
		if it == nil {
			return fmt.Errorf("dynamo: commit: operation %q: %w", p.id, store.ErrNotFound)
		}
		return fmt.Errorf("dynamo: commit: operation %q: %w: it is %s, not pending", p.id, store.ErrConflict, it.s("status"))
	case "ap_cancel":
		it, err := s.getItem(ctx, runPK(runID), approvalSK(p.id))
		if err != nil {
			return err
		}
		if it == nil {
			return fmt.Errorf("dynamo: commit: approval %q: %w", p.id, store.ErrNotFound)
		}
		skip["cancel:"+p.id] = true // no longer pending: nothing to cancel
		return nil
	case "input":
		it, err := s.getItem(ctx, runPK(runID), inputSK(p.id))
		if err != nil {
			return err
		}
		if it == nil {
			return fmt.Errorf("dynamo: commit: input %q: %w", p.id, store.ErrNotFound)
		}
		return fmt.Errorf("dynamo: commit: input %q: %w: already consumed", p.id, store.ErrConflict)
	case "cp", "cp_id":
		return fmt.Errorf("dynamo: commit: checkpoint %q: %w: id or seq exists", p.id, store.ErrConflict)
	case "cp_ref":
		return fmt.Errorf("dynamo: commit: checkpoint %q: %w", p.id, store.ErrNotFound)
	default:
		// An event seq taken means the cached version was behind; the run
		// row's condition normally says so first. Re-read and retry.
		s.forget(runID)
		return nil
	}
}

// afterCommit updates the cache with what the transaction wrote.
func (s *Store) afterCommit(c *store.Commit, st runState, tx commitTx) {
	st.ver = tx.newVer
	st.lastSeq = tx.lastSeq
	st.lastHash = tx.lastHash
	st.cpSeq = tx.cpSeq
	st.status = tx.status
	st.limits = tx.limits
	st.token = c.Token
	if c.Run != nil && c.Run.ReleaseLease {
		st.leased = false
	}
	st.reserved = store.Amounts{} // unknown without a read; only used after one
	s.remember(c.RunID, st)
}
