package dynamo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/keelrun/keel/internal/kernel/run"
)

// transact sends one TransactWriteItems with a fresh ClientRequestToken:
// the SDK's own retries of this call reuse it, so a request that succeeded
// but whose answer was lost is not applied twice.
func (s *Store) transact(ctx context.Context, items []types.TransactWriteItem) error {
	_, err := s.c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems:      items,
		ClientRequestToken: aws.String(requestToken()),
	})
	return err
}

func requestToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail on supported platforms
	return hex.EncodeToString(b[:])
}

// txFailure describes a cancelled transaction: which actions failed their
// condition, and whether the cancellation is worth retrying as is.
type txFailure struct {
	failed    map[int]bool
	retryable bool // TransactionConflict, throttling: nothing to re-read
}

// asTxFailure classifies err; ok is false when err is not a cancellation.
func asTxFailure(err error) (txFailure, bool) {
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		f := txFailure{failed: map[int]bool{}}
		for i, r := range tce.CancellationReasons {
			switch aws.ToString(r.Code) {
			case "ConditionalCheckFailed":
				f.failed[i] = true
			case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
				f.retryable = true
			}
		}
		return f, true
	}
	var tc *types.TransactionConflictException
	var tip *types.TransactionInProgressException
	if errors.As(err, &tc) || errors.As(err, &tip) {
		return txFailure{failed: map[int]bool{}, retryable: true}, true
	}
	return txFailure{}, false
}

func isConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// maxAttempts bounds the optimistic retry loops. Each failed attempt means
// another writer made progress, so the bound is only reached under
// extreme contention; the error then says so.
const maxAttempts = 200

// backoff sleeps before retry attempt n (1-based), growing to ~50ms with
// jitter, or returns the context's error.
func backoff(ctx context.Context, n int) error {
	if n <= 1 {
		return ctx.Err()
	}
	d := time.Duration(min(n, 10)) * 5 * time.Millisecond
	var b [1]byte
	_, _ = rand.Read(b[:])
	d += time.Duration(b[0]) * d / 255
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func tooContended(what, runID string) error {
	return fmt.Errorf("dynamo: %s on run %q: gave up after %d attempts under contention", what, runID, maxAttempts)
}

// runRowUpdate is the first action of every transaction that appends
// events: it moves ver, last_seq and last_hash (head, from eventPuts),
// conditioned on the ver the caller built the transaction from — the ver
// that st.lastHash belongs to.
func (s *Store) runRowUpdate(runID string, st runState, nEvents int, head string, now time.Time, e *expr, u *update, conds []string) types.TransactWriteItem {
	u.set = append(u.set,
		e.name("ver")+" = "+e.value(nv(st.ver+1)),
		e.name("last_seq")+" = "+e.value(nv(st.lastSeq+int64(nEvents))),
		e.name("updated_at")+" = "+e.value(tv(now)))
	if head != "" {
		u.set = append(u.set, e.name("last_hash")+" = "+e.value(sv(head)))
	}
	conds = append([]string{"attribute_exists(" + e.name("pk") + ")", e.name("ver") + " = " + e.value(nv(st.ver))}, conds...)
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(s.table),
		Key:                       key(runPK(runID), runSK),
		UpdateExpression:          aws.String(u.String()),
		ConditionExpression:       aws.String(and(conds)),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
	}}
}

// eventPuts builds the puts of events after lastSeq, chained after the
// event whose hash is prev, and returns the new head; zero times become now.
func (s *Store) eventPuts(runID string, lastSeq int64, prev string, events []run.Event, now time.Time) ([]types.TransactWriteItem, []int64, string) {
	items := make([]types.TransactWriteItem, len(events))
	seqs := make([]int64, len(events))
	chained := make([]run.Event, len(events))
	for i, ev := range events {
		if ev.Time.IsZero() {
			ev.Time = now
		}
		ev.Time = ts(nanos(ev.Time)) // hashed as stored
		chained[i] = ev
	}
	head := run.Chain(runID, prev, chained)
	for i, ev := range chained {
		seq := lastSeq + int64(i) + 1
		seqs[i] = seq
		it := item{"pk": sv(runPK(runID)), "sk": sv(eventSK(seq))}
		it.setN("seq", seq)
		it.setS("type", string(ev.Type))
		it.setT("time", ev.Time)
		it.setS("plan_item_id", ev.PlanItemID)
		it.setS("operation_id", ev.OperationID)
		it.setB("data", ev.Data)
		it.setS("prev_hash", ev.PrevHash)
		it.setS("hash", ev.Hash)
		items[i] = s.putNew(it)
	}
	return items, seqs, head
}

// putNew is a Put that fails if the item exists.
func (s *Store) putNew(it item) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                aws.String(s.table),
		Item:                     it,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": "pk"},
	}}
}
