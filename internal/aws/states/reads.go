package states

import (
	"context"
	"database/sql"
)

// Reads. On the run store's file (NewStoreWith) the handle given for
// writes is the store's single write connection, which the group
// transaction holds for a whole batch: a read made there waited for the
// batch, and the next batch waited for the read (bench/load: a tenth of
// the writer's time was its BEGIN waiting for the connection). A Writer
// that also has a read pool (ReadDB) takes the executor's reads instead,
// each a WAL snapshot that sees every transaction committed before it.

// readPool is a Writer's read handle: many connections, read-only.
type readPool interface {
	ReadDB() *sql.DB
}

// The executor's reads, prepared once on the read pool.
const (
	qToken       = `SELECT token, execution_arn, state, status, output, error, cause, heartbeat_ms FROM sfn_tokens WHERE token = ?`
	qDefinition  = `SELECT definition FROM sfn_definitions WHERE hash = ?`
	qMachineHash = `SELECT def_hash FROM sfn_state_machines WHERE arn = ?`
	qExecByARN   = execSelect + ` WHERE arn = ?`
	qRunning     = execSelect + ` WHERE status = ? ORDER BY start_ms`
	qHistoryAsc  = `SELECT id, type, ts_ms, details FROM sfn_history WHERE execution_arn = ? ORDER BY id ASC LIMIT ? OFFSET ?`
	qHistoryDesc = `SELECT id, type, ts_ms, details FROM sfn_history WHERE execution_arn = ? ORDER BY id DESC LIMIT ? OFFSET ?`
)

var readQueries = []string{qToken, qDefinition, qMachineHash, qExecByARN, qRunning, qHistoryAsc, qHistoryDesc}

// reader runs the read queries, through their statements when prepared.
// stmts is filled before the Store is shared and never changed after.
type reader struct {
	db    *sql.DB
	stmts map[string]*sql.Stmt
}

func (r reader) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if st, ok := r.stmts[q]; ok {
		return st.QueryRowContext(ctx, args...)
	}
	return r.db.QueryRowContext(ctx, q, args...)
}

func (r reader) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st, ok := r.stmts[q]; ok {
		return st.QueryContext(ctx, args...)
	}
	return r.db.QueryContext(ctx, q, args...)
}

// prepare prepares the read queries on r.db.
func (r *reader) prepare(ctx context.Context) error {
	r.stmts = map[string]*sql.Stmt{}
	for _, q := range readQueries {
		st, err := r.db.PrepareContext(ctx, q)
		if err != nil {
			r.close()
			return err
		}
		r.stmts[q] = st
	}
	return nil
}

func (r *reader) close() {
	for q, st := range r.stmts {
		_ = st.Close()
		delete(r.stmts, q)
	}
}
