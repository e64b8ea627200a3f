package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/keelrun/keel/internal/artifact"
	"github.com/keelrun/keel/internal/run"
	"github.com/keelrun/keel/internal/store"
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
	var sp *spill
	if cp := c.Checkpoint; cp != nil && s.artifacts != nil && len(cp.State) > s.spill {
		k := artifact.Key{RunID: c.RunID, CheckpointID: cp.ID, Name: "state." + cp.StateHash}
		info, err := s.artifacts.Put(ctx, k, cp.State)
		if err != nil {
			return nil, fmt.Errorf("dynamo: commit: spill checkpoint %q: %w", cp.ID, err)
		}
		sp = &spill{key: k, hash: info.SHA256}
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
			// Releasing more than is reserved leaves zero, never negative.
			released = store.Amounts{Tokens: min(released.Tokens, st.reserved.Tokens),
				SpendMicroUSD: min(released.SpendMicroUSD, st.reserved.SpendMicroUSD),
				ToolCalls:     min(released.ToolCalls, st.reserved.ToolCalls)}
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

// part says what one action of a commit transaction writes, so a failed
// condition can be explained.
type part struct {
	kind string // run, event, op_new, op_update, ap_new, ap_cancel, input, cp, cp_id, cp_ref, plan
	id   string
	hash string // args hash of a new op/approval
	tool string // tool of a new approval
}

type commitTx struct {
	items    []types.TransactWriteItem
	parts    []part
	seqs     []int64
	newVer   int64
	cpSeq    int64
	status   run.Status
	lastSeq  int64
	lastHash string
}

func (s *Store) buildCommit(c *store.Commit, st runState, released store.Amounts, sp *spill, skip map[string]bool) commitTx {
	now := s.now()
	tx := commitTx{newVer: st.ver + 1, cpSeq: st.cpSeq, status: st.status, lastSeq: st.lastSeq + int64(len(c.Events))}
	add := func(p part, it types.TransactWriteItem) {
		tx.parts = append(tx.parts, p)
		tx.items = append(tx.items, it)
	}

	// 1. The run row: fence, version, patch, budget.
	e := newExpr()
	u := &update{}
	conds := []string{
		e.name("lease_token") + " = " + e.value(nv(c.Token)),
		e.name("lease_owner") + " <> " + e.value(sv("")),
	}
	checkpointID := ""
	if p := c.Run; p != nil {
		if p.Status != "" {
			tx.status = p.Status
			v := e.value(sv(string(p.Status)))
			u.set = append(u.set, e.name("status")+" = "+v, e.name("g_status")+" = "+v)
		}
		for _, f := range []struct {
			attr string
			v    *string
		}{{"output", p.Output}, {"error", p.Error}, {"command", p.Command}} {
			switch {
			case f.v == nil:
			case *f.v == "":
				u.clear(e, f.attr)
			default:
				u.set = append(u.set, e.name(f.attr)+" = "+e.value(sv(*f.v)))
			}
		}
		if p.StepsDelta != 0 {
			u.set = append(u.set, e.name("step_count")+" = "+e.name("step_count")+" + "+e.value(nv(p.StepsDelta)))
		}
		checkpointID = p.CheckpointID
		if p.ReleaseLease {
			u.clear(e, "lease_owner")
			u.clear(e, "lease_expiry")
		}
	}
	var cp run.Checkpoint
	if c.Checkpoint != nil {
		cp = *c.Checkpoint
		checkpointID = cp.ID
		if cp.Seq == 0 {
			cp.Seq = st.cpSeq + 1
		}
		if cp.Seq > st.cpSeq {
			tx.cpSeq = cp.Seq
			u.set = append(u.set, e.name("cp_seq")+" = "+e.value(nv(cp.Seq)))
		}
	}
	if checkpointID != "" {
		u.set = append(u.set, e.name("checkpoint_id")+" = "+e.value(sv(checkpointID)))
	}
	for _, b := range []struct {
		used, res, total string
		u, r             int64
	}{
		{"tok_used", "tok_res", "tok_total", c.Used.Tokens, released.Tokens},
		{"spend_used", "spend_res", "spend_total", c.Used.SpendMicroUSD, released.SpendMicroUSD},
		{"calls_used", "calls_res", "calls_total", c.Used.ToolCalls, released.ToolCalls},
	} {
		if b.u != 0 {
			u.set = append(u.set, e.name(b.used)+" = "+e.name(b.used)+" + "+e.value(nv(b.u)))
		}
		if b.r != 0 {
			v := e.value(nv(b.r))
			u.set = append(u.set, e.name(b.res)+" = "+e.name(b.res)+" - "+v)
			conds = append(conds, e.name(b.res)+" >= "+v)
		}
		if d := b.u - b.r; d != 0 {
			u.set = append(u.set, e.name(b.total)+" = "+e.name(b.total)+" + "+e.value(nv(d)))
		}
	}
	evs, seqs, head := s.eventPuts(c.RunID, st.lastSeq, st.lastHash, c.Events, now)
	tx.lastHash = st.lastHash
	if head != "" {
		tx.lastHash = head
	}
	add(part{kind: "run"}, s.runRowUpdate(c.RunID, st, len(c.Events), head, now, e, u, conds))

	// 2. Events.
	tx.seqs = seqs
	for i, it := range evs {
		add(part{kind: "event", id: fmt.Sprint(seqs[i])}, it)
	}

	// 3. Checkpoint: the item by seq and the id pointer, or a check that
	// the checkpoint the patch points at exists.
	if c.Checkpoint != nil {
		cp.RunID = c.RunID
		cp.CreatedAt = now
		add(part{kind: "cp", id: cp.ID}, s.putNew(checkpointItem(c.RunID, cp, sp)))
		ptr := item{"pk": sv(runPK(c.RunID)), "sk": sv(cpIDSK(cp.ID))}
		ptr.setN("seq", cp.Seq)
		add(part{kind: "cp_id", id: cp.ID}, s.putNew(ptr))
	} else if checkpointID != "" {
		add(part{kind: "cp_ref", id: checkpointID}, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName:                aws.String(s.table),
			Key:                      key(runPK(c.RunID), cpIDSK(checkpointID)),
			ConditionExpression:      aws.String("attribute_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": "pk"},
		}})
	}

	// 4. Plan items, replaced by id.
	for _, pi := range c.PlanItems {
		pi.UpdatedAt = now
		add(part{kind: "plan", id: pi.ID}, types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(s.table), Item: planItemItem(c.RunID, pi)}})
	}

	// 5. Operations and approvals. ord = version × 1000 + position keeps
	// insertion order across commits.
	ord := tx.newVer * 1000
	for _, op := range c.NewOperations {
		if skip["op:"+op.ID] {
			continue
		}
		ord++
		op.RunID, op.Status, op.CreatedAt, op.UpdatedAt = c.RunID, run.OpPending, now, now
		add(part{kind: "op_new", id: op.ID, hash: op.ArgsHash}, s.putNew(opItem(c.RunID, op, ord)))
	}
	for _, up := range c.OperationUpdates {
		e := newExpr()
		u := &update{set: []string{
			e.name("status") + " = " + e.value(sv(string(up.Status))),
			e.name("updated_at") + " = " + e.value(tv(now)),
			e.name("attempts") + " = " + e.name("attempts") + " + " + e.value(nv(up.AttemptsDelta)),
		}}
		if up.ExternalID != "" {
			u.set = append(u.set, e.name("external_id")+" = "+e.value(sv(up.ExternalID)))
		}
		if len(up.Result) > 0 {
			u.set = append(u.set, e.name("result")+" = "+e.value(bv(up.Result)))
		}
		if up.Error != "" {
			u.set = append(u.set, e.name("error")+" = "+e.value(sv(up.Error)))
		}
		add(part{kind: "op_update", id: up.ID}, s.updateChild(c.RunID, opSK(up.ID), e, u,
			e.name("status")+" = "+e.value(sv(string(run.OpPending)))))
	}
	for _, a := range c.NewApprovals {
		if skip["ap:"+a.ID] {
			continue
		}
		ord++
		a.RunID, a.SessionID, a.Status, a.CreatedAt = c.RunID, st.sessionID, run.ApprovalPending, now
		add(part{kind: "ap_new", id: a.ID, hash: a.ArgsHash, tool: a.Tool}, s.putNew(approvalItem(c.RunID, a, ord)))
	}
	for _, id := range c.CancelApprovals {
		if skip["cancel:"+id] {
			continue
		}
		e := newExpr()
		u := &update{set: []string{
			e.name("status") + " = " + e.value(sv(string(run.ApprovalCancelled))),
			e.name("decided_at") + " = " + e.value(tv(now)),
		}}
		add(part{kind: "ap_cancel", id: id}, s.updateChild(c.RunID, approvalSK(id), e, u,
			e.name("status")+" = "+e.value(sv(string(run.ApprovalPending)))))
	}

	// 6. Inputs consumed.
	for _, id := range c.ConsumeInputs {
		e := newExpr()
		u := &update{set: []string{e.name("consumed") + " = " + e.value(boolv(true))}}
		add(part{kind: "input", id: id}, s.updateChild(c.RunID, inputSK(id), e, u,
			e.name("consumed")+" = "+e.value(boolv(false))))
	}
	return tx
}

// updateChild is a transactional update of an existing child item of a run,
// under cond.
func (s *Store) updateChild(runID, sk string, e *expr, u *update, cond string) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(s.table),
		Key:                       key(runPK(runID), sk),
		UpdateExpression:          aws.String(u.String()),
		ConditionExpression:       aws.String("attribute_exists(" + e.name("pk") + ") AND " + cond),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
	}}
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
	st.token = c.Token
	if c.Run != nil && c.Run.ReleaseLease {
		st.leased = false
	}
	st.reserved = store.Amounts{} // unknown without a read; only used after one
	s.remember(c.RunID, st)
}
