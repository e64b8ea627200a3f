package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// BenchmarkStepCommit measures, in one run on one machine, the durable write
// of a plain agent step two ways, 1,000 steps each per iteration:
//
//   - floor: a raw SQLite transaction (WAL, synchronous=FULL, prepared
//     statements) appending the step's two message rows;
//   - store: Store.Commit of the same step as the harness writes it: a run
//     patch (step count, current checkpoint), two events and a checkpoint
//     holding the step's delta (the two messages).
//
// It reports ms per step for both, their ratio (target: within 2x), and the
// database size after the 1,000 steps (WAL checkpointed into the main file).
//
//	go test -run '^$' -bench StepCommit -benchtime 1x ./internal/backend/store/sqlite/
func BenchmarkStepCommit(b *testing.B) {
	const steps = 1000
	const block = 50 // alternate floor and store in blocks so both see the same disk weather
	ctx := context.Background()
	var floorDur, storeDur time.Duration
	var floorBytes, storeBytes int64
	for range b.N {
		dir := b.TempDir()
		floor, err := openFloor(ctx, filepath.Join(dir, "floor.db"))
		if err != nil {
			b.Fatal(err)
		}
		st, err := sqlite.Open(ctx, filepath.Join(dir, "keel.db"), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		r, _, err := st.CreateRun(ctx, run.Run{ID: "run_bench", SessionID: "s", Owner: "o", Request: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		r, err = st.AcquireLease(ctx, r.ID, "bench", time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		token := r.Lease.Token
		for start := 0; start < steps; start += block {
			t0 := time.Now()
			for i := start; i < start+block; i++ {
				if err := floor.step(ctx, i); err != nil {
					b.Fatal(err)
				}
			}
			t1 := time.Now()
			for i := start; i < start+block; i++ {
				if err := storeStep(ctx, st, token, i); err != nil {
					b.Fatal(err)
				}
			}
			t2 := time.Now()
			floorDur += t1.Sub(t0)
			storeDur += t2.Sub(t1)
		}
		fb, err := checkpointedSize(ctx, floor.db, filepath.Join(dir, "floor.db"))
		if err != nil {
			b.Fatal(err)
		}
		sb, err := checkpointedSize(ctx, st.DB(), filepath.Join(dir, "keel.db"))
		if err != nil {
			b.Fatal(err)
		}
		floorBytes, storeBytes = fb, sb
		_ = floor.db.Close()
		_ = st.Close()
	}
	n := float64(b.N * steps)
	floorMs := float64(floorDur.Microseconds()) / 1000 / n
	storeMs := float64(storeDur.Microseconds()) / 1000 / n
	b.ReportMetric(0, "ns/op") // one op is 1,000 steps of each; the per-step figures below are the result
	b.ReportMetric(floorMs, "floor-ms/step")
	b.ReportMetric(storeMs, "store-ms/step")
	b.ReportMetric(storeMs/floorMs, "store/floor")
	b.ReportMetric(float64(floorBytes), "floor-bytes@1000")
	b.ReportMetric(float64(storeBytes), "store-bytes@1000")
}

// messages returns the two messages of step i: an assistant turn with a tool
// call and the tool's result, a few hundred bytes like a real short step.
func messages(i int) (assistant, tool []byte) {
	assistant = fmt.Appendf(nil, `{"role":"assistant","content":[{"type":"text","text":"Step %d: fetching the next source to compare figures."},{"type":"tool_use","id":"call_%d","name":"web_fetch","input":{"url":"https://example.com/report/%d"}}]}`, i, i, i)
	tool = fmt.Appendf(nil, `{"role":"tool","tool_use_id":"call_%d","content":"Revenue for segment %d grew 4.2%% quarter over quarter; margins held at 31%%."}`, i, i)
	return assistant, tool
}

type floorDB struct {
	db  *sql.DB
	ins *sql.Stmt
}

func openFloor(ctx context.Context, path string) (*floorDB, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE messages (run_id TEXT NOT NULL, seq INTEGER NOT NULL,
		body BLOB NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID`); err != nil {
		return nil, err
	}
	ins, err := db.PrepareContext(ctx, `INSERT INTO messages(run_id, seq, body) VALUES (?, ?, ?)`)
	if err != nil {
		return nil, err
	}
	return &floorDB{db: db, ins: ins}, nil
}

func (f *floorDB) step(ctx context.Context, i int) error {
	a, t := messages(i)
	tx, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	stmt := tx.StmtContext(ctx, f.ins)
	if _, err := stmt.ExecContext(ctx, "run_bench", 2*i, a); err != nil {
		_ = tx.Rollback()
		return err
	}
	if _, err := stmt.ExecContext(ctx, "run_bench", 2*i+1, t); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func storeStep(ctx context.Context, st *sqlite.Store, token int64, i int) error {
	a, t := messages(i)
	state, err := json.Marshal([]json.RawMessage{a, t})
	if err != nil {
		return err
	}
	cpID := fmt.Sprintf("cp_%06d", i)
	parent := ""
	if i > 0 {
		parent = fmt.Sprintf("cp_%06d", i-1)
	}
	_, err = st.Commit(ctx, store.Commit{
		RunID: "run_bench", Token: token,
		Run: &store.RunPatch{StepsDelta: 1},
		Events: []run.Event{
			{Type: run.EventModelCallCompleted, Data: json.RawMessage(`{"input_tokens":812,"output_tokens":64}`)},
			{Type: run.EventToolCompleted, Data: fmt.Appendf(nil, `{"tool":"web_fetch","call_id":"call_%d"}`, i)},
		},
		Checkpoint: &run.Checkpoint{ID: cpID, Parent: parent, Step: int64(i + 1), State: state},
	})
	return err
}

// checkpointedSize folds the WAL into the main file and returns its size.
func checkpointedSize(ctx context.Context, db *sql.DB, path string) (int64, error) {
	if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return 0, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
