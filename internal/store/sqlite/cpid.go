package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"

	"github.com/keelrun/keel/internal/run"
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

// cpAtRow and cpInIndex are the two places a checkpoint row c of the run
// keyed ?1 with the id cpWhere gave ?2, ?3 and ?4 for may be: at the row
// its derived form names, or in the partial index of every other form.
// cpByID is either; as two EXISTS, each a seek, it is cheaper in a commit
// than one OR, which SQLite plans as a multi-index OR.
const (
	cpAtRow   = `c.ck = (?1 << 32) + ?2 AND c.id = ?3`
	cpInIndex = `c.id = ?4 AND c.ck >> 32 = ?1 AND ` + cpIndexed
	cpByID    = `EXISTS (SELECT 1 FROM checkpoints c WHERE ` + cpAtRow + `) OR EXISTS (SELECT 1 FROM checkpoints c WHERE ` + cpInIndex + `)`
)

// cpByRunID is the condition on a checkpoint row c that it is the run
// whose id is ?1's, with the id cpWhere gave ?2, ?3 and ?4 for. (The key is
// looked up in each term: through a CTE, SQLite scans the table.)
const cpByRunID = `(c.ck = (` + rkOfRun + ` << 32) + ?2 AND c.id = ?3) OR (c.id = ?4 AND c.ck >> 32 = ` + rkOfRun + ` AND ` + cpIndexed + `)`

const rkOfRun = `(SELECT rk FROM runs WHERE id = ?1)`

// cpWhere are cpByID's arguments after the run's key (cpByRunID's after
// the run's id), for id: where its
// derived form would be (a seq, 0 for none, and the 10 bytes) and its
// indexed form.
func cpWhere(id string) []any {
	seq, ok := run.CheckpointIDSeq(id)
	if !ok || seq == 0 {
		return []any{int64(0), nil, idKey(cpPrefix, id)}
	}
	return []any{seq, cpIDCol(id, seq), idKey(cpPrefix, id)}
}

// cpIDTaken reports whether the run keyed rk has id in the form it would
// not be stored in at seq: the unique index (and the primary key) refuse a
// duplicate in the same form. One seek, the one the form calls for: an id
// stored derived may be in the index (committed at another seq), and one
// naming another seq may be derived at that seq's row.
func (s *Store) cpIDTaken(ctx context.Context, tx *sql.Tx, rk int64, id string, seq int64) (bool, error) {
	at, ok := run.CheckpointIDSeq(id)
	if !ok || at == 0 {
		return false, nil
	}
	var taken bool
	var err error
	if at == seq {
		err = s.queryRow(ctx, tx, qCheckpointInIndex, idKey(cpPrefix, id), rk).Scan(&taken)
	} else {
		err = s.queryRow(ctx, tx, qCheckpointAtRow, rk<<32|at, cpIDCol(id, at)).Scan(&taken)
	}
	return taken, err
}
