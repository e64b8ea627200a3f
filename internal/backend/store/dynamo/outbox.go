package dynamo

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// The outbox (see doc.go): each notification is a child item of its run
// (sk NTF#id) holding its whole record, and, while it is pending, a marker
// in the one partition outboxPK (sk runID#id) holding when it is due. A
// worker queries that partition, which holds only what is undelivered, and
// a finished notification's marker is deleted in the write that finishes it.
const outboxPK = "OUTBOX"

func notificationSK(id string) string { return "NTF#" + id }
func outboxSK(runID, id string) string {
	return fmt.Sprintf("%d:%s#%s", len(runID), runID, id)
}

func notificationItem(n run.Notification) item {
	it := item{"pk": sv(runPK(n.RunID)), "sk": sv(notificationSK(n.ID))}
	it.setS("id", n.ID)
	it.setS("kind", string(n.Kind))
	it.setS("approval_id", n.ApprovalID)
	it.setS("tool", n.Tool)
	it.setS("args_hash", n.ArgsHash)
	it.setS("status", string(n.Status))
	it.setN("attempts", n.Attempts)
	it.setT("next_at", n.NextAttemptAt)
	it.setT("created_at", n.CreatedAt)
	it.setT("updated_at", n.UpdatedAt)
	return it
}

func itemToNotification(runID string, it item) run.Notification {
	n := run.Notification{ID: it.s("id"), RunID: runID, Kind: run.NotificationKind(it.s("kind")),
		ApprovalID: it.s("approval_id"), Tool: it.s("tool"), ArgsHash: it.s("args_hash"),
		Status: run.NotificationStatus(it.s("status")), Attempts: it.n("attempts"), NextAttemptAt: it.t("next_at"),
		LastError: it.s("last_error"), LinkHash: it.s("link_hash"), LinkExpiresAt: it.t("link_expires_at"),
		LinkUsedAt: it.t("link_used_at"), CreatedAt: it.t("created_at"), UpdatedAt: it.t("updated_at")}
	if d := it.s("delivered"); d != "" {
		n.Delivered = strings.Split(d, ",")
	}
	return n
}

func outboxMarker(n run.Notification) item {
	it := item{"pk": sv(outboxPK), "sk": sv(outboxSK(n.RunID, n.ID))}
	it.setS("run_id", n.RunID)
	it.setS("id", n.ID)
	it.setT("next_at", n.NextAttemptAt)
	return it
}

// addNotifications adds c's new notifications and their markers to tx; one
// found to exist on an earlier attempt (skip) is left as it is.
func (s *Store) addNotifications(tx *commitTx, c *store.Commit, skip map[string]bool, now time.Time) {
	for _, n := range c.Notifications {
		if skip["ntf:"+n.ID] {
			continue
		}
		n.RunID, n.Status, n.NextAttemptAt, n.CreatedAt, n.UpdatedAt = c.RunID, run.NotificationPending, now, now, now
		tx.add(part{kind: "ntf_new", id: n.ID}, s.putNew(notificationItem(n)))
		tx.add(part{kind: "ntf_due", id: n.ID}, s.putNew(outboxMarker(n)))
	}
}

// DueNotifications implements store.Outbox, earliest due first.
func (s *Store) DueNotifications(ctx context.Context, now time.Time, limit int) ([]run.Notification, error) {
	if limit <= 0 || limit > store.MaxRunsPerPage {
		limit = store.MaxRunsPerPage
	}
	e := newExpr()
	markers, err := s.queryAll(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String(e.name("pk") + " = " + e.value(sv(outboxPK))),
		FilterExpression:          aws.String(e.name("next_at") + " <= " + e.value(tv(now))),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo: due notifications: %w", err)
	}
	sort.SliceStable(markers, func(i, j int) bool { return markers[i].s("next_at") < markers[j].s("next_at") })
	var out []run.Notification
	for _, m := range markers {
		if len(out) == limit {
			break
		}
		it, err := s.getItem(ctx, runPK(m.s("run_id")), notificationSK(m.s("id")))
		if err != nil {
			return nil, fmt.Errorf("dynamo: due notifications: %w", err)
		}
		if it == nil {
			continue
		}
		n := itemToNotification(m.s("run_id"), it)
		if n.Status == run.NotificationPending && !n.NextAttemptAt.After(now) {
			out = append(out, n)
		}
	}
	return out, nil
}

// ListNotifications implements store.Outbox, oldest first.
func (s *Store) ListNotifications(ctx context.Context, runID string) ([]run.Notification, error) {
	items, err := s.list(ctx, runID, "NTF#")
	if err != nil {
		return nil, err
	}
	out := make([]run.Notification, 0, len(items))
	for _, it := range items {
		out = append(out, itemToNotification(runID, it))
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// UpdateNotification implements store.Outbox in one transaction: the
// record under its condition, and its marker moved (still pending) or
// deleted (finished).
func (s *Store) UpdateNotification(ctx context.Context, n run.Notification, prevAttempts int64) error {
	if err := store.ValidateNotificationUpdate(n, prevAttempts); err != nil {
		return err
	}
	e := newExpr()
	u := &update{set: []string{
		e.name("status") + " = " + e.value(sv(string(n.Status))),
		e.name("attempts") + " = " + e.value(nv(n.Attempts)),
		e.name("next_at") + " = " + e.value(tv(n.NextAttemptAt)),
		e.name("last_error") + " = " + e.value(sv(n.LastError)),
		e.name("delivered") + " = " + e.value(sv(strings.Join(n.Delivered, ","))),
		e.name("link_hash") + " = " + e.value(sv(n.LinkHash)),
		e.name("link_expires_at") + " = " + e.value(tv(n.LinkExpiresAt)),
		e.name("updated_at") + " = " + e.value(tv(s.now())),
	}}
	cond := e.name("status") + " = " + e.value(sv(string(run.NotificationPending))) + " AND " +
		e.name("attempts") + " = " + e.value(nv(prevAttempts))
	marker := types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: outboxMarker(n)}}
	if n.Status != run.NotificationPending {
		marker = types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: key(outboxPK, outboxSK(n.RunID, n.ID))}}
	}
	err := s.transact(ctx, []types.TransactWriteItem{s.updateChild(n.RunID, notificationSK(n.ID), e, u, cond), marker})
	if err == nil {
		return nil
	}
	if _, ok := asTxFailure(err); !ok {
		return fmt.Errorf("dynamo: update notification %q: %w", n.ID, err)
	}
	it, gerr := s.getItem(ctx, runPK(n.RunID), notificationSK(n.ID))
	switch {
	case gerr != nil:
		return gerr
	case it == nil:
		return fmt.Errorf("dynamo: notification %q of run %q: %w", n.ID, n.RunID, store.ErrNotFound)
	}
	return fmt.Errorf("dynamo: update notification %q: %w: not pending at attempt %d", n.ID, store.ErrConflict, prevAttempts)
}
