package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/keelrun/keel/internal/run"
	"github.com/keelrun/keel/internal/store"
)

// eventsPerInsert is the most events one INSERT statement writes;
// eventInserts[n-1] writes n, each prepared once (hotQueries).
const eventsPerInsert = 8

var eventInserts = func() []string {
	out := make([]string, eventsPerInsert)
	for n := 1; n <= eventsPerInsert; n++ {
		q := `INSERT INTO events(run_id, seq, type, time, plan_item_id, operation_id, data, prev_hash, hash) VALUES `
		for i := range n {
			if i > 0 {
				q += ", "
			}
			q += "(?, ?, ?, ?, ?, ?, ?, ?, ?)"
		}
		out[n-1] = q
	}
	return out
}()

// insertEvents writes events after seq last, whose hash is prev, and returns
// their seqs and the new head of the chain. The caller holds the write lock
// and updates runs.last_seq and runs.last_hash; the primary key (run_id, seq)
// would refuse a duplicate even if it did not.
func (s *Store) insertEvents(ctx context.Context, tx *sql.Tx, runID string, last int64, prev string, events []run.Event, now time.Time) ([]int64, string, error) {
	if len(events) > 0 {
		s.touch(runID)
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
	// A few rows per statement: a plain step appends five events, and one
	// statement for them costs less than five.
	args := make([]any, 0, 9*eventsPerInsert)
	for at := 0; at < len(chained); at += eventsPerInsert {
		chunk := chained[at:min(at+eventsPerInsert, len(chained))]
		args = args[:0]
		for i, e := range chunk {
			seq := last + int64(at+i) + 1
			var data any
			if len(e.Data) > 0 {
				data = []byte(e.Data)
			}
			args = append(args, runID, seq, e.Type, e.Time.UnixNano(), e.PlanItemID, e.OperationID, data, e.PrevHash, e.Hash)
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
func (s *Store) ReadEvents(ctx context.Context, runID string, afterSeq int64, limit int) ([]run.Event, error) {
	limit, err := store.ValidatePage(runID, afterSeq, limit)
	if err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT seq, type, time, plan_item_id, operation_id, data, prev_hash, hash FROM events
		WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`, runID, afterSeq, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read events of %q: %w", runID, err)
	}
	defer rows.Close()
	var out []run.Event
	for rows.Next() {
		e := run.Event{RunID: runID}
		var t int64
		var data []byte
		if err := rows.Scan(&e.Seq, &e.Type, &t, &e.PlanItemID, &e.OperationID, &data, &e.PrevHash, &e.Hash); err != nil {
			return nil, fmt.Errorf("sqlite: read events of %q: %w", runID, err)
		}
		e.Time = ts(t)
		if len(data) > 0 {
			e.Data = data
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: read events of %q: %w", runID, err)
	}
	if len(out) == 0 {
		if err := runExists(ctx, s.r, runID); err != nil {
			return nil, err
		}
	}
	return out, nil
}
