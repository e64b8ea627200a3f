package sqlite

import (
	"context"
	"encoding/binary"
	"encoding/hex"

	"github.com/keelrun/keel/internal/kernel/run"
)

// A checkpoint id of run.NewCheckpointID's form whose seq is its own row's
// is stored as the 10 bytes of its time and random digits (0007): the row
// gives the seq back, and a lookup by the id goes to the row (ck) without
// an index. Every other id is stored as idKey says and is in the partial
// index checkpoints_id, whose condition is cpIndexed.
const (
	cpDerivedLen = 10
	cpIndexed    = `(typeof(c.id) != 'blob' OR length(c.id) != 10)`
)

// cpIDCol is what the checkpoint row at seq stores as its id.
func cpIDCol(id string, seq int64) any {
	if s, ok := run.CheckpointIDSeq(id); ok && s == seq {
		b := idKey(cpPrefix, id).([]byte)
		return append(b[:6:6], b[10:]...)
	}
	return idKey(cpPrefix, id)
}

// cpIDText reads back the id column of the checkpoint row at seq (or a
// parent column, with the seq of the row it names).
func cpIDText(v any, seq int64) string {
	b, ok := v.([]byte)
	if !ok || len(b) != cpDerivedLen {
		return idText(cpPrefix, v)
	}
	var full [14]byte
	copy(full[:6], b[:6])
	binary.BigEndian.PutUint32(full[6:10], uint32(seq))
	copy(full[10:], b[6:])
	return cpPrefix + hex.EncodeToString(full[:])
}

// A run's checkpoint id is in one of two places: at the row its derived
// form names (qCheckpointAtRow), or in the partial index of every other
// form (qCheckpointInIndex). Each query is one seek.
const (
	qCheckpointAtRow   = `SELECT EXISTS (SELECT 1 FROM checkpoints c WHERE c.ck = ? AND c.id = ?)`
	qCheckpointInIndex = `SELECT EXISTS (SELECT 1 FROM checkpoints c WHERE c.id = ? AND c.ck >> 32 = ? AND ` + cpIndexed + `)`
)

// cpByRunID is the condition on a checkpoint row c that it is the run
// whose id is ?1's, with the id cpWhere gave ?2, ?3 and ?4 for. (The key is
// looked up in each term: through a CTE, SQLite scans the table.)
const cpByRunID = `(c.ck = (` + rkOfRun + ` << 32) + ?2 AND c.id = ?3) OR (c.id = ?4 AND c.ck >> 32 = ` + rkOfRun + ` AND ` + cpIndexed + `)`

const rkOfRun = `(SELECT rk FROM runs WHERE id = ?1)`

// cpWhere are cpByRunID's arguments after the run's id, for id: where its
// derived form would be (a seq, 0 for none, and the 10 bytes) and its
// indexed form.
func cpWhere(id string) []any {
	seq, ok := run.CheckpointIDSeq(id)
	if !ok || seq == 0 {
		return []any{int64(0), nil, idKey(cpPrefix, id)}
	}
	return []any{seq, cpIDCol(id, seq), idKey(cpPrefix, id)}
}

// cpIDIn reports whether the run keyed rk has id stored derived (atRow:
// at the row its seq names) or in the index (inIndex), whichever are asked.
func cpIDIn(ctx context.Context, q querier, rk int64, id string, atRow, inIndex bool) (bool, error) {
	var found bool
	if at, ok := run.CheckpointIDSeq(id); atRow && ok && at != 0 {
		if err := q.QueryRowContext(ctx, qCheckpointAtRow, rk<<32|at, cpIDCol(id, at)).Scan(&found); err != nil || found {
			return found, err
		}
	}
	if inIndex {
		err := q.QueryRowContext(ctx, qCheckpointInIndex, idKey(cpPrefix, id), rk).Scan(&found)
		return found, err
	}
	return false, nil
}

// cpIDTaken reports whether the run keyed rk has id in the form it would
// not be stored in at seq; the unique index (and the primary key) refuse a
// duplicate in the same form. An id stored derived at seq may be in the
// index (committed at another seq); one naming another seq may be derived
// at that seq's row.
func cpIDTaken(ctx context.Context, q querier, rk int64, id string, seq int64) (bool, error) {
	at, ok := run.CheckpointIDSeq(id)
	if !ok || at == 0 {
		return false, nil
	}
	return cpIDIn(ctx, q, rk, id, at != seq, at == seq)
}
