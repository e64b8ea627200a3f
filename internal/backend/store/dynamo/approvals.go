package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// GetApproval implements store.Approvals.
func (s *Store) GetApproval(ctx context.Context, runID, approvalID string) (run.Approval, error) {
	it, err := s.child(ctx, "approval", runID, approvalID, approvalSK(approvalID))
	if err != nil {
		return run.Approval{}, err
	}
	return itemToApproval(runID, it), nil
}

// ListApprovals implements store.Approvals, oldest first.
func (s *Store) ListApprovals(ctx context.Context, runID string) ([]run.Approval, error) {
	items, err := s.list(ctx, runID, "AP#")
	if err != nil {
		return nil, err
	}
	var out []run.Approval
	for _, it := range items {
		out = append(out, itemToApproval(runID, it))
	}
	return out, nil
}

// DecideApproval implements store.Approvals in one TransactWriteItems: the
// run row (seq), the decided approval (conditioned on pending and the
// hash), the event, for an approved confirm_once the grant, and the link
// of d.Link spent (conditioned on its hash and on being unused). The check
// order is store.Approvals'.
func (s *Store) DecideApproval(ctx context.Context, d store.Decision) (run.Approval, error) {
	if err := store.ValidateDecision(d); err != nil {
		return run.Approval{}, err
	}
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		if err := backoff(ctx, attempt); err != nil {
			return run.Approval{}, err
		}
		it, err := s.child(ctx, "approval", d.RunID, d.ApprovalID, approvalSK(d.ApprovalID))
		if err != nil {
			return run.Approval{}, err
		}
		a := itemToApproval(d.RunID, it)
		if d.Link != nil {
			if err := s.linkUsable(ctx, d.RunID, *d.Link); err != nil {
				return run.Approval{}, err
			}
		}
		if a.Status != run.ApprovalPending {
			return run.Approval{}, fmt.Errorf("dynamo: decide approval %q: %w: it is %s", a.ID, store.ErrConflict, a.Status)
		}
		if a.ArgsHash != d.ArgsHash {
			return run.Approval{}, fmt.Errorf("dynamo: decide approval %q: %w", a.ID, store.ErrHashMismatch)
		}
		status, evType := run.ApprovalDenied, run.EventApprovalDenied
		if d.Approve {
			status, evType = run.ApprovalApproved, run.EventApprovalGranted
		}
		data, err := json.Marshal(map[string]string{"approval_id": a.ID, "decided_by": d.DecidedBy, "args_hash": a.ArgsHash})
		if err != nil {
			return run.Approval{}, err
		}
		var decidedAt int64
		moved := false
		_, _, err = s.appendTx(ctx, "decide approval", d.RunID, []run.Event{{Type: evType, PlanItemID: a.PlanItemID, Data: data}},
			nil, nil,
			func(st runState, _ int64) ([]types.TransactWriteItem, func(context.Context, int) error) {
				now := s.now()
				decidedAt = nanos(now)
				items := []types.TransactWriteItem{s.decideItem(d, a, status, decidedAt)}
				if d.Approve && a.Mode == run.ModeConfirmOnce {
					items = append(items, s.grantItem(a, d.DecidedBy, decidedAt))
				}
				if d.Link != nil {
					items = append(items, s.spendLinkItem(d.RunID, *d.Link))
				}
				return items, func(context.Context, int) error {
					moved = true // decided meanwhile: re-read and report
					return errStop
				}
			})
		if moved {
			continue
		}
		if err != nil {
			return run.Approval{}, err
		}
		a.Status, a.DecidedBy, a.Reason, a.DecidedAt = status, d.DecidedBy, d.Reason, ts(decidedAt)
		return a, nil
	}
	return run.Approval{}, tooContended("decide approval", d.RunID)
}

// decideItem is the update that gives pending approval a its decision d,
// conditioned on it being still pending, for the same args and with the
// task token as read.
func (s *Store) decideItem(d store.Decision, a run.Approval, status run.ApprovalStatus, decidedAt int64) types.TransactWriteItem {
	e := newExpr()
	u := &update{set: []string{
		e.name("status") + " = " + e.value(sv(string(status))),
		e.name("decided_by") + " = " + e.value(sv(d.DecidedBy)),
		e.name("decided_at") + " = " + e.value(tv(ts(decidedAt))),
	}}
	if d.Reason != "" {
		u.set = append(u.set, e.name("reason")+" = "+e.value(sv(d.Reason)))
	}
	// The token read is the one returned: a token attached
	// meanwhile fails the write, and the retry reads it.
	var tok string
	if a.TaskToken != "" {
		tok = e.name("task_token") + " = " + e.value(sv(a.TaskToken))
	} else {
		tok = "attribute_not_exists(" + e.name("task_token") + ") OR " + e.name("task_token") + " = " + e.value(sv(""))
	}
	return s.updateChild(d.RunID, approvalSK(a.ID), e, u, and([]string{
		e.name("status") + " = " + e.value(sv(string(run.ApprovalPending))),
		e.name("args_hash") + " = " + e.value(sv(d.ArgsHash)),
		tok,
	}))
}

// grantItem records the session's grant of a's tool that a confirm-once
// approval gives. A grant that exists is kept (first approval wins),
// without failing the transaction.
func (s *Store) grantItem(a run.Approval, grantedBy string, decidedAt int64) types.TransactWriteItem {
	g := newExpr()
	set := func(attr string, v types.AttributeValue) string {
		return g.name(attr) + " = if_not_exists(" + g.name(attr) + ", " + g.value(v) + ")"
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.table),
		Key:       key(sessionPK(a.SessionID), grantSK(a.Tool)),
		UpdateExpression: aws.String("SET " + join([]string{
			set("approval_id", sv(a.ID)), set("granted_by", sv(grantedBy)),
			set("tool", sv(a.Tool)), set("created_at", tv(ts(decidedAt)))})),
		ExpressionAttributeNames:  g.names,
		ExpressionAttributeValues: g.values,
	}}
}

// linkUsable reads the notification of l: ErrNotFound unless it has the
// link l.Hash, ErrLinkUsed when that link was used.
func (s *Store) linkUsable(ctx context.Context, runID string, l store.LinkUse) error {
	it, err := s.getItem(ctx, runPK(runID), notificationSK(l.NotificationID))
	switch {
	case err != nil:
		return err
	case it == nil || it.s("link_hash") == "" || it.s("link_hash") != l.Hash:
		return fmt.Errorf("dynamo: notification %q has no such link: %w", l.NotificationID, store.ErrNotFound)
	case it["link_used_at"] != nil:
		return fmt.Errorf("dynamo: notification %q: %w", l.NotificationID, store.ErrLinkUsed)
	}
	return nil
}

// spendLinkItem marks the link of l used, conditioned on its hash and on
// its being unused: a link spent meanwhile fails the decision's write,
// and the retry reads why (linkUsable).
func (s *Store) spendLinkItem(runID string, l store.LinkUse) types.TransactWriteItem {
	e := newExpr()
	u := &update{set: []string{
		e.name("link_used_at") + " = " + e.value(tv(l.At)),
		e.name("updated_at") + " = " + e.value(tv(s.now())),
	}}
	return s.updateChild(runID, notificationSK(l.NotificationID), e, u,
		e.name("link_hash")+" = "+e.value(sv(l.Hash))+" AND attribute_not_exists("+e.name("link_used_at")+")")
}

// errStop ends an appendTx loop so the caller can re-read and decide.
var errStop = errors.New("dynamo: stop")

// AttachTaskToken implements store.Approvals with one conditional
// UpdateItem. A later token replaces an earlier one (a retried wait state
// gets a new token), also on a decided approval, which is returned as
// stored.
func (s *Store) AttachTaskToken(ctx context.Context, runID, approvalID, token string) (run.Approval, error) {
	if err := store.ValidateTaskToken(runID, approvalID, token); err != nil {
		return run.Approval{}, err
	}
	e := newExpr()
	out, err := s.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(runPK(runID), approvalSK(approvalID)),
		UpdateExpression:          aws.String("SET " + e.name("task_token") + " = " + e.value(sv(token))),
		ConditionExpression:       aws.String("attribute_exists(" + e.name("pk") + ")"),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if isConditionFailed(err) {
		return run.Approval{}, fmt.Errorf("dynamo: approval %q of run %q: %w", approvalID, runID, store.ErrNotFound)
	}
	if err != nil {
		return run.Approval{}, fmt.Errorf("dynamo: attach task token to %q: %w", approvalID, err)
	}
	return itemToApproval(runID, item(out.Attributes)), nil
}

// HasGrant implements store.Approvals.
func (s *Store) HasGrant(ctx context.Context, sessionID, tool string) (bool, error) {
	if err := store.ValidateGrant(sessionID, tool); err != nil {
		return false, err
	}
	it, err := s.getItem(ctx, sessionPK(sessionID), grantSK(tool))
	if err != nil {
		return false, err
	}
	return it != nil, nil
}
