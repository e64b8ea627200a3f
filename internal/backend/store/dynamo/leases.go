package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// AcquireLease implements store.Leases with one conditional UpdateItem. An
// expired lease (expiry <= now) is free to anyone; the owner holding an
// unexpired lease may take it again with a new token.
func (s *Store) AcquireLease(ctx context.Context, runID, owner string, ttl time.Duration) (run.Run, error) {
	if err := store.ValidateLease(runID, owner, ttl); err != nil {
		return run.Run{}, err
	}
	now := s.now()
	e := newExpr()
	lo, st := e.name("lease_owner"), e.name("status")
	update := "SET " + lo + " = " + e.value(sv(owner)) + ", " +
		e.name("lease_token") + " = " + e.name("lease_token") + " + " + e.value(nv(1)) + ", " +
		e.name("lease_expiry") + " = " + e.value(tv(now.Add(ttl))) + ", " +
		e.name("updated_at") + " = " + e.value(tv(now))
	cond := and([]string{
		"attribute_exists(" + e.name("pk") + ")",
		st + " <> " + e.value(sv(string(run.StatusCompleted))) + " AND " + st + " <> " + e.value(sv(string(run.StatusFailed))) +
			" AND " + st + " <> " + e.value(sv(string(run.StatusCancelled))) + " AND " + st + " <> " + e.value(sv(string(run.StatusNeedsHuman))),
		"attribute_not_exists(" + lo + ") OR " + lo + " = " + e.value(sv("")) + " OR " + lo + " = " + e.value(sv(owner)) + " OR " +
			e.name("lease_expiry") + " <= " + e.value(tv(now)),
	})
	it, applied, err := s.updateRun(ctx, "acquire lease", runID, e, update, cond)
	if err != nil {
		return run.Run{}, err
	}
	r := itemToRun(it)
	if applied {
		return r, nil
	}
	if r.Status.Terminal() {
		return run.Run{}, fmt.Errorf("dynamo: acquire lease on %q: %w (%s)", runID, store.ErrTerminal, r.Status)
	}
	if r.Status == run.StatusNeedsHuman {
		return run.Run{}, fmt.Errorf("dynamo: acquire lease on %q: %w", runID, store.ErrNeedsHuman)
	}
	return run.Run{}, fmt.Errorf("dynamo: acquire lease on %q: %w until %s", runID, store.ErrLeaseHeld, r.Lease.Expiry.Format(time.RFC3339Nano))
}

// ReleaseLease implements store.Leases: one conditional UpdateItem on the
// token. Releasing again with the same token is a no-op; the token is kept
// so the next holder's is higher.
func (s *Store) ReleaseLease(ctx context.Context, runID string, token int64) error {
	if err := store.ValidateID("run id", runID); err != nil {
		return err
	}
	e := newExpr()
	_, err := s.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table),
		Key:       key(runPK(runID), runSK),
		UpdateExpression: aws.String("SET " + e.name("updated_at") + " = " + e.value(tv(s.now())) +
			", " + e.name("lease_owner") + " = " + e.value(sv("")) + ", " + e.name("lease_expiry") + " = " + e.value(sv(""))),
		ConditionExpression:       aws.String("attribute_exists(" + e.name("pk") + ") AND " + e.name("lease_token") + " = " + e.value(nv(token))),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
	})
	if err == nil {
		if st, ok := s.cached(runID); ok {
			st.leased = false
			s.remember(runID, st)
		}
		return nil
	}
	if !isConditionFailed(err) {
		return fmt.Errorf("dynamo: release lease on %q: %w", runID, err)
	}
	it, rerr := s.readRun(ctx, runID)
	if rerr != nil {
		return rerr
	}
	return fmt.Errorf("dynamo: release lease on %q: %w (token %d, current %d)", runID, store.ErrFenced, token, it.n("lease_token"))
}
