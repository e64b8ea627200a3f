package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// eventsPerInsert is the most events one INSERT statement writes;
// eventInserts[n-1] writes n, each prepared once (hotQueries).
const eventsPerInsert = 8

var eventInserts = func() []string {
	out := make([]string, eventsPerInsert)
	for n := 1; n <= eventsPerInsert; n++ {
		q := `INSERT INTO events(ek, type, time, plan_item_id, operation_id, data, hash) VALUES `
		for i := range n {
			if i > 0 {
				q += ", "
			}
			q += "(?, ?, ?, ?, ?, ?, ?)"
		}
		out[n-1] = q
	}
	return out
}()

// insertEvents writes events after seq last, whose hash is prev and
// stored time lastTime, to the run runID keyed rk, and returns their seqs
// and the new head of the chain. cp
// is the checkpoint the same transaction writes (nil when none): its
// checkpoint_written event is stored by reference (eventData). The caller
// holds the write lock and updates runs.last_seq and runs.last_hash; the
// primary key (rk << 32 | seq) would refuse a duplicate even if it did not.
func (s *Store) insertEvents(ctx context.Context, tx *sql.Tx, runID string, rk, last int64, prev string, lastTime int64, events []run.Event, cp *run.Checkpoint, now time.Time) ([]int64, string, error) {
	if len(events) > 0 {
		s.touch(runID)
	}
	if err := checkKey(rk, last+int64(len(events))); err != nil {
		return nil, "", fmt.Errorf("sqlite: append events to %q: %w", runID, err)
	}
	seqs := make([]int64, len(events))
	chained := make([]run.Event, len(events))
	for i, e := range events {
		if e.Time.IsZero() {
			e.Time = now
		}
		e.Time = ts(e.Time.UnixNano()) // hashed as stored
		chained[i] = e
	}
	head := run.Chain(runID, prev, chained)
	// An event without a stored hash stores its time as the difference
	// from the event before it (a few bytes, not 8): reading derives both
	// in order. The run's last event keeps its hash, so its time is whole.
	prevTime := lastTime
	// A few rows per statement: one statement for a step's events costs
	// less than one each.
	args := make([]any, 0, 7*eventsPerInsert)
	for at := 0; at < len(chained); at += eventsPerInsert {
		chunk := chained[at:min(at+eventsPerInsert, len(chained))]
		args = args[:0]
		for i, e := range chunk {
			seq := last + int64(at+i) + 1
			t := e.Time.UnixNano()
			args = append(args, rk<<32|seq, s.types.encode(e.Type), t-prevTime, idKey(itemPrefix, e.PlanItemID), e.OperationID,
				s.eventData(e, cp), nil)
			if at+i == len(chained)-1 {
				// Only the commit's last event keeps its hash (and its whole
				// time): the others' follow from it and are derived on read
				// (ReadEvents); an edit of any of them still breaks this one.
				args[len(args)-5], args[len(args)-1] = t, eventHash(e.Hash)
			}
			prevTime = t
			seqs[at+i] = seq
		}
		if _, err := s.exec(ctx, tx, eventInserts[len(chunk)-1], args...); err != nil {
			return nil, "", fmt.Errorf("sqlite: append events %d..%d to %q: %w", last+int64(at)+1, last+int64(at+len(chunk)), runID, err)
		}
	}
	return seqs, head, nil
}

// AppendEvents implements store.Events.
func (s *Store) AppendEvents(ctx context.Context, runID string, events []run.Event) ([]int64, error) {
	if err := store.ValidateAppend(runID, events); err != nil {
		return nil, err
	}
	var seqs []int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		seqs, err = s.appendTx(ctx, tx, runID, s.clock(), events...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return seqs, nil
}

// ReadEvents implements store.Events. A limit of 0 means
// store.MaxEventsPerPage; larger limits are capped to it.
//
// Only the last event of each commit stores its hash (0006); the others'
// are derived here, from the one before, as the commit computed them. So
// the read starts at the last stored hash at or before afterSeq (the
// first event's prev_hash is afterSeq's hash).
func (s *Store) ReadEvents(ctx context.Context, runID string, afterSeq int64, limit int) ([]run.Event, error) {
	limit, err := store.ValidatePage(runID, afterSeq, limit)
	if err != nil {
		return nil, err
	}
	from := int64(0)
	if afterSeq > 0 {
		err := s.rq.QueryRowContext(ctx, `WITH r AS (SELECT rk << 32 AS base FROM runs WHERE id = ?)
			SELECT e.ek - r.base FROM r JOIN events e ON e.ek > r.base AND e.ek <= r.base + ? AND e.hash IS NOT NULL
			ORDER BY e.ek DESC LIMIT 1`, runID, afterSeq).Scan(&from)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("sqlite: read events of %q: %w", runID, err)
		}
	}
	// A checkpoint_written stored by reference (an INTEGER data) reads its
	// checkpoint row.
	rows, err := s.rq.QueryContext(ctx, `WITH r AS (SELECT rk << 32 AS base FROM runs WHERE id = ?)
		SELECT e.ek - r.base, e.type, e.time, e.plan_item_id, e.operation_id, e.data, e.hash, c.id, c.size
		FROM r JOIN events e ON e.ek >= r.base + ? AND e.ek < r.base + 4294967296
		LEFT JOIN checkpoints c ON typeof(e.data) = 'integer' AND c.ck = r.base + e.data
		ORDER BY e.ek LIMIT ?`, runID, from, int64(limit)+1+afterSeq-from)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read events of %q: %w", runID, err)
	}
	defer rows.Close()
	var out []run.Event
	prev, prevTime := "", int64(0)
	for rows.Next() {
		e := run.Event{RunID: runID}
		var t int64
		var typ, pid, data, hash, cpID any
		var cpSize sql.NullInt64
		if err := rows.Scan(&e.Seq, &typ, &t, &pid, &e.OperationID, &data, &hash, &cpID, &cpSize); err != nil {
			return nil, fmt.Errorf("sqlite: read events of %q: %w", runID, err)
		}
		e.PrevHash = prev
		if hash == nil {
			t += prevTime // stored as the difference from the event before
		}
		prevTime = t
		if hash != nil && e.Seq <= afterSeq {
			prev = hashText("", hash)
			continue // only its hash and time are needed
		}
		if err := s.decodeEvent(&e, typ, t, pid, data, cpID, cpSize); err != nil {
			return nil, fmt.Errorf("sqlite: read event %d of %q: %w", e.Seq, runID, err)
		}
		if hash != nil {
			e.Hash = hashText("", hash) // an empty BLOB: written before the chain (0002)
		} else {
			e.Hash, e.HashDerived = run.EventHash(e), true
		}
		prev = e.Hash
		if e.Seq <= afterSeq {
			continue
		}
		out = append(out, e)
		if len(out) == limit {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: read events of %q: %w", runID, err)
	}
	if len(out) == 0 {
		if err := runExists(ctx, s.rq, runID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decodeEvent sets e's fields from its row's columns.
func (s *Store) decodeEvent(e *run.Event, typ any, t int64, pid, data, cpID any, cpSize sql.NullInt64) error {
	var err error
	e.PlanItemID = idText(itemPrefix, pid)
	if e.Type, err = s.types.decode(typ); err != nil {
		return err
	}
	e.Time = ts(t)
	switch d := data.(type) {
	case []byte:
		if e.Data, err = s.pc.unpack(d); err != nil {
			return err
		}
	case string:
		e.Data = []byte(d)
	case int64:
		if cpID != nil {
			e.Data = checkpointEventData(cpIDText(cpID, d), d, cpSize.Int64)
		} else {
			// The checkpoint row is gone: what is left is its seq, which
			// no longer hashes to the event's hash.
			e.Data = []byte(strconv.FormatInt(d, 10))
		}
	}
	return nil
}
