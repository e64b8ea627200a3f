package dynamo

import (
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// part says what one action of a commit transaction writes, so a failed
// condition can be explained.
type part struct {
	kind string // run, event, op_new, op_update, ap_new, ap_cancel, ntf_new, ntf_due, input, cp, cp_id, cp_ref, plan
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
	limits   run.Limits // the run's limits after the commit
}

// add appends one action and what it writes; parts[i] explains items[i].
func (tx *commitTx) add(p part, it types.TransactWriteItem) {
	tx.parts = append(tx.parts, p)
	tx.items = append(tx.items, it)
}

// buildCommit is c as one transaction from the run state st: the run row
// first (its condition is the fence), then events, checkpoint, plan items,
// operations and approvals, inputs. Parts named in skip are left out.
func (s *Store) buildCommit(c *store.Commit, st runState, released store.Amounts, sp *spill, skip map[string]bool) commitTx {
	now := s.now()
	tx := commitTx{newVer: st.ver + 1, cpSeq: st.cpSeq, status: st.status, lastSeq: st.lastSeq + int64(len(c.Events)), limits: st.limits}

	// 1. The run row: fence, version, patch, budget. The order of the
	// expression's names and values below is the order they are numbered.
	e := newExpr()
	u := &update{}
	conds := []string{
		e.name("lease_token") + " = " + e.value(nv(c.Token)),
		e.name("lease_owner") + " <> " + e.value(sv("")),
	}
	checkpointID := ""
	if p := c.Run; p != nil {
		checkpointID = p.CheckpointID
		tx.patchRun(e, u, p)
		tx.raiseLimits(e, u, p.RaiseLimits)
	}
	var cp run.Checkpoint
	if c.Checkpoint != nil {
		cp = tx.nextCheckpoint(e, u, *c.Checkpoint, st.cpSeq)
		checkpointID = cp.ID
	}
	if checkpointID != "" {
		u.set = append(u.set, e.name("checkpoint_id")+" = "+e.value(sv(checkpointID)))
	}
	conds = settleBudget(e, u, conds, c.Used, released)
	evs, seqs, head := s.eventPuts(c.RunID, st.lastSeq, st.lastHash, c.Events, now)
	tx.lastHash = st.lastHash
	if head != "" {
		tx.lastHash = head
	}
	tx.add(part{kind: "run"}, s.runRowUpdate(c.RunID, st, len(c.Events), head, now, e, u, conds))

	// 2. Events.
	tx.seqs = seqs
	for i, it := range evs {
		tx.add(part{kind: "event", id: fmt.Sprint(seqs[i])}, it)
	}
	// 3. Checkpoint.
	s.addCheckpoint(&tx, c, cp, checkpointID, sp, now)
	// 4. Plan items, replaced by id.
	for _, pi := range c.PlanItems {
		pi.UpdatedAt = now
		tx.add(part{kind: "plan", id: pi.ID}, types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(s.table), Item: planItemItem(c.RunID, pi)}})
	}
	// 5. Operations and approvals.
	s.addIntents(&tx, c, st.sessionID, skip, now)
	s.addNotifications(&tx, c, skip, now)
	// 6. Inputs consumed.
	for _, id := range c.ConsumeInputs {
		tx.add(part{kind: "input", id: id}, s.consumeInput(c.RunID, id))
	}
	return tx
}

// patchRun adds the run patch p to the run row's update: status (and its
// index copy), texts (an empty one removes the attribute), steps, lease.
func (tx *commitTx) patchRun(e *expr, u *update, p *store.RunPatch) {
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
	if p.ReleaseLease {
		u.clear(e, "lease_owner")
		u.clear(e, "lease_expiry")
	}
}

// raiseLimits adds raise to the run's limits that are set: the cached
// limits are those of the row version the commit's condition names, so a
// limit that is zero (none) there stays none, as on SQLite.
func (tx *commitTx) raiseLimits(e *expr, u *update, raise run.Limits) {
	for _, f := range []struct {
		attr string
		cur  *int64
		by   int64
	}{{"max_steps", &tx.limits.MaxSteps, raise.MaxSteps}, {"max_tool_calls", &tx.limits.MaxToolCalls, raise.MaxToolCalls},
		{"max_tokens", &tx.limits.MaxTokens, raise.MaxTokens}, {"max_spend", &tx.limits.MaxSpendMicroUSD, raise.MaxSpendMicroUSD}} {
		if f.by > 0 && *f.cur > 0 {
			*f.cur += f.by
			u.set = append(u.set, e.name(f.attr)+" = "+e.name(f.attr)+" + "+e.value(nv(f.by)))
		}
	}
}

// nextCheckpoint returns cp with its seq filled in (the run's last + 1
// when zero) and moves the run row's cp_seq forward to it.
func (tx *commitTx) nextCheckpoint(e *expr, u *update, cp run.Checkpoint, lastSeq int64) run.Checkpoint {
	if cp.Seq == 0 {
		cp.Seq = lastSeq + 1
	}
	if cp.Seq > lastSeq {
		tx.cpSeq = cp.Seq
		u.set = append(u.set, e.name("cp_seq")+" = "+e.value(nv(cp.Seq)))
	}
	return cp
}

// settleBudget adds used and released to the run row's budget counters
// and returns conds with the conditions that keep each reservation from
// going below zero.
func settleBudget(e *expr, u *update, conds []string, used, released store.Amounts) []string {
	for _, b := range []struct {
		used, res, total string
		u, r             int64
	}{
		{"tok_used", "tok_res", "tok_total", used.Tokens, released.Tokens},
		{"spend_used", "spend_res", "spend_total", used.SpendMicroUSD, released.SpendMicroUSD},
		{"calls_used", "calls_res", "calls_total", used.ToolCalls, released.ToolCalls},
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
	return conds
}

// addCheckpoint adds the new checkpoint cp (the item by seq and the id
// pointer), or a check that the checkpoint the patch points at exists.
func (s *Store) addCheckpoint(tx *commitTx, c *store.Commit, cp run.Checkpoint, checkpointID string, sp *spill, now time.Time) {
	if c.Checkpoint != nil {
		cp.RunID = c.RunID
		cp.CreatedAt = now
		tx.add(part{kind: "cp", id: cp.ID}, s.putNew(checkpointItem(c.RunID, cp, sp)))
		ptr := item{"pk": sv(runPK(c.RunID)), "sk": sv(cpIDSK(cp.ID))}
		ptr.setN("seq", cp.Seq)
		tx.add(part{kind: "cp_id", id: cp.ID}, s.putNew(ptr))
	} else if checkpointID != "" {
		tx.add(part{kind: "cp_ref", id: checkpointID}, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName:                aws.String(s.table),
			Key:                      key(runPK(c.RunID), cpIDSK(checkpointID)),
			ConditionExpression:      aws.String("attribute_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": "pk"},
		}})
	}
}

// addIntents adds the new operations, operation updates, new approvals
// (in the run's session) and approval cancels, leaving out those in skip.
// ord = version × 1000 + position keeps insertion order across commits.
func (s *Store) addIntents(tx *commitTx, c *store.Commit, sessionID string, skip map[string]bool, now time.Time) {
	ord := tx.newVer * 1000
	for _, op := range c.NewOperations {
		if skip["op:"+op.ID] {
			continue
		}
		ord++
		op.RunID, op.Status, op.CreatedAt, op.UpdatedAt = c.RunID, run.OpPending, now, now
		tx.add(part{kind: "op_new", id: op.ID, hash: op.ArgsHash}, s.putNew(opItem(c.RunID, op, ord)))
	}
	for _, up := range c.OperationUpdates {
		tx.add(part{kind: "op_update", id: up.ID}, s.opUpdate(c.RunID, up, now))
	}
	for _, a := range c.NewApprovals {
		if skip["ap:"+a.ID] {
			continue
		}
		ord++
		a.RunID, a.SessionID, a.Status, a.CreatedAt = c.RunID, sessionID, run.ApprovalPending, now
		tx.add(part{kind: "ap_new", id: a.ID, hash: a.ArgsHash, tool: a.Tool}, s.putNew(approvalItem(c.RunID, a, ord)))
	}
	for _, id := range c.CancelApprovals {
		if skip["cancel:"+id] {
			continue
		}
		tx.add(part{kind: "ap_cancel", id: id}, s.cancelApproval(c.RunID, id, now))
	}
}

// opUpdate is the update of a pending operation to up's outcome.
func (s *Store) opUpdate(runID string, up store.OperationUpdate, now time.Time) types.TransactWriteItem {
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
	// The error is replaced, as on SQLite: an outcome after a new attempt
	// clears what the last one said.
	u.set = append(u.set, e.name("error")+" = "+e.value(sv(up.Error)))
	return s.updateChild(runID, opSK(up.ID), e, u,
		e.name("status")+" = "+e.value(sv(string(run.OpPending))))
}

// cancelApproval is the update that cancels approval id while pending.
func (s *Store) cancelApproval(runID, id string, now time.Time) types.TransactWriteItem {
	e := newExpr()
	u := &update{set: []string{
		e.name("status") + " = " + e.value(sv(string(run.ApprovalCancelled))),
		e.name("decided_at") + " = " + e.value(tv(now)),
	}}
	return s.updateChild(runID, approvalSK(id), e, u,
		e.name("status")+" = "+e.value(sv(string(run.ApprovalPending))))
}

// consumeInput is the update that marks input id consumed, once.
func (s *Store) consumeInput(runID, id string) types.TransactWriteItem {
	e := newExpr()
	u := &update{set: []string{e.name("consumed") + " = " + e.value(boolv(true))}}
	return s.updateChild(runID, inputSK(id), e, u,
		e.name("consumed")+" = "+e.value(boolv(false)))
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
