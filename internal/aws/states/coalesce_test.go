package states

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// countingWriter is a Writer of its own transactions that counts them: a
// transition's write is one WriteTx, as on the run store's group commit.
type countingWriter struct {
	db *sql.DB
	n  atomic.Int64
}

func (w *countingWriter) WriteTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	w.n.Add(1)
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Pass and Choice transitions, a tokenless task's start and a task's
// outcome followed by pure states wait in memory for the next commit:
// Start → Pass → Choice → Task → Succeed is two writes (the start, the
// task's outcome with the end) instead of six, and the history still has
// every event, in order, with gapless ids.
func TestDeterministicTransitionsShareTheNextCommit(t *testing.T) {
	ctx := t.Context()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "k.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	w := &countingWriter{db: db}
	st, err := NewStoreWith(ctx, db, w)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	var calls atomic.Int64
	e, err := New(Config{Store: st, Lambdas: map[string]LambdaFunc{
		"fn": func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
			calls.Add(1)
			return json.RawMessage(`{"ok":true}`), nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	m, err := Load([]byte(`{"StartAt":"P","States":{
		"P":{"Type":"Pass","Result":{"go":true},"Next":"C"},
		"C":{"Type":"Choice","Choices":[{"Variable":"$.go","BooleanEquals":true,"Next":"T"}],"Default":"F"},
		"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"fn","Payload.$":"$"},"Next":"S"},
		"S":{"Type":"Succeed"},
		"F":{"Type":"Fail","Error":"no"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	arn, err := e.Register(ctx, "m", m)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	before := w.n.Load()
	out, err := e.StartExecution(ctx, StartExecutionInput{StateMachineArn: arn, Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	waitSucceeded(ctx, t, e, out.ExecutionArn)
	if n := w.n.Load() - before; n != 2 || calls.Load() != 1 {
		t.Fatalf("%d writes and %d task calls, want 2 and 1", n, calls.Load())
	}
	evs, err := e.GetExecutionHistory(ctx, out.ExecutionArn, 0, HistoryLimit, false)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for i, ev := range evs {
		if ev.ID != int64(i+1) {
			t.Fatalf("event %d has id %d", i+1, ev.ID)
		}
		types = append(types, ev.Type)
	}
	want := []string{"ExecutionStarted", "PassStateEntered", "PassStateExited", "ChoiceStateEntered", "ChoiceStateExited",
		"TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSucceeded", "TaskStateExited",
		"SucceedStateEntered", "SucceedStateExited", "ExecutionSucceeded"}
	if !slices.Equal(types, want) {
		t.Fatalf("history %v\nwant    %v", types, want)
	}
}

// A task's outcome waits for the next commit only while pure states
// follow: the next task is invoked after it is durable. T1 → Choice → T2 →
// Succeed: the start, T1's outcome (committed before T2's call, with the
// Choice and T2's start) and T2's outcome with the end — three writes, and
// T2's call finds T1's TaskSucceeded in the database.
func TestTaskOutcomeDurableBeforeTheNextCall(t *testing.T) {
	ctx := t.Context()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "k.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	w := &countingWriter{db: db}
	st, err := NewStoreWith(ctx, db, w)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	seen := make(chan int, 2) // TaskSucceeded events durable at each call
	e, err := New(Config{Store: st, Lambdas: map[string]LambdaFunc{
		"fn": func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
			var n int
			if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sfn_history WHERE type = 'TaskSucceeded'`).Scan(&n); err != nil {
				return nil, err
			}
			seen <- n
			return json.RawMessage(`{"go":true}`), nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	m, err := Load([]byte(`{"StartAt":"T1","States":{
		"T1":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"fn","Payload.$":"$"},"OutputPath":"$.Payload","Next":"C"},
		"C":{"Type":"Choice","Choices":[{"Variable":"$.go","BooleanEquals":true,"Next":"T2"}],"Default":"F"},
		"T2":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"fn","Payload.$":"$"},"Next":"S"},
		"S":{"Type":"Succeed"},
		"F":{"Type":"Fail","Error":"no"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	arn, err := e.Register(ctx, "m", m)
	if err != nil {
		t.Fatal(err)
	}
	before := w.n.Load()
	out, err := e.StartExecution(ctx, StartExecutionInput{StateMachineArn: arn, Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	waitSucceeded(ctx, t, e, out.ExecutionArn)
	close(seen)
	var got []int
	for n := range seen {
		got = append(got, n)
	}
	if !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("TaskSucceeded events durable at the calls: %v, want [0 1]", got)
	}
	if n := w.n.Load() - before; n != 3 {
		t.Fatalf("%d writes, want 3", n)
	}
	evs, err := e.GetExecutionHistory(ctx, out.ExecutionArn, 0, HistoryLimit, false)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for i, ev := range evs {
		if ev.ID != int64(i+1) {
			t.Fatalf("event %d has id %d", i+1, ev.ID)
		}
		types = append(types, ev.Type)
	}
	want := []string{"ExecutionStarted", "TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSucceeded", "TaskStateExited",
		"ChoiceStateEntered", "ChoiceStateExited", "TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSucceeded", "TaskStateExited",
		"SucceedStateEntered", "SucceedStateExited", "ExecutionSucceeded"}
	if !slices.Equal(types, want) {
		t.Fatalf("history %v\nwant    %v", types, want)
	}
}

// A token task's outcome is durable in the token's row when the executor
// reads it, so its transition waits for the next commit like a Choice's,
// even across the next invocation: TT → T → Succeed writes the token's
// start, TT's submission, then T's outcome with everything before it. An
// executor stopped during T's call (the pending events lost) resumes at
// TT, finds the token's outcome again and calls T again, and the history
// has each event once.
func TestTokenOutcomeWaitsAcrossTheNextCall(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "k.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	w := &countingWriter{db: db}
	st, err := NewStoreWith(ctx, db, w)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	tokens := make(chan string, 1)
	calls := make(chan int, 2) // TaskSucceeded events durable at each call of T
	block := make(chan struct{})
	var tCalls atomic.Int64
	lambdas := map[string]LambdaFunc{
		"ask": func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
			var in struct{ Token string }
			if err := json.Unmarshal(p, &in); err != nil {
				return nil, err
			}
			tokens <- in.Token
			return json.RawMessage(`{}`), nil
		},
		"fn": func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			var n int
			if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sfn_history WHERE type = 'TaskSucceeded'`).Scan(&n); err != nil {
				return nil, err
			}
			calls <- n
			if tCalls.Add(1) == 1 {
				<-block // the first call outlives its executor
			}
			return json.RawMessage(`{"done":true}`), nil
		},
	}
	def := []byte(`{"StartAt":"TT","States":{
		"TT":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken","Parameters":{"FunctionName":"ask","Payload":{"Token.$":"$$.Task.Token"}},"Next":"T"},
		"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"fn","Payload.$":"$"},"Next":"S"},
		"S":{"Type":"Succeed"}}}`)
	start := func() *Executor {
		e, err := New(Config{Store: st, Lambdas: lambdas})
		if err != nil {
			t.Fatal(err)
		}
		m, err := Load(def, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Register(ctx, "m", m); err != nil {
			t.Fatal(err)
		}
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := start()
	before := w.n.Load()
	out, err := e.StartExecution(ctx, StartExecutionInput{StateMachineArn: e.StateMachineARN("m"), Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SendTaskSuccess(ctx, <-tokens, `{"approved":true}`); err != nil {
		t.Fatal(err)
	}
	if n := <-calls; n != 0 {
		t.Fatalf("T's first call found %d TaskSucceeded events durable, want 0 (TT's waits in memory)", n)
	}
	e.Close() // during T's first call
	close(block)
	e = start()
	t.Cleanup(e.Close)
	if n := <-calls; n != 0 {
		t.Fatalf("T's second call found %d TaskSucceeded events durable, want 0", n)
	}
	waitSucceeded(ctx, t, e, out.ExecutionArn)
	if tCalls.Load() != 2 {
		t.Fatalf("%d calls of T, want 2", tCalls.Load())
	}
	// The start, TT's token, its submission, SendTaskSuccess's token row,
	// the second executor's Register, and T's outcome with the end.
	if n := w.n.Load() - before; n != 6 {
		t.Fatalf("%d writes, want 6", n)
	}
	evs, err := e.GetExecutionHistory(ctx, out.ExecutionArn, 0, HistoryLimit, false)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for i, ev := range evs {
		if ev.ID != int64(i+1) {
			t.Fatalf("event %d has id %d", i+1, ev.ID)
		}
		types = append(types, ev.Type)
	}
	want := []string{"ExecutionStarted", "TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSubmitted", "TaskSucceeded", "TaskStateExited",
		"TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSucceeded", "TaskStateExited",
		"SucceedStateEntered", "SucceedStateExited", "ExecutionSucceeded"}
	if !slices.Equal(types, want) {
		t.Fatalf("history %v\nwant    %v", types, want)
	}
}

// waitSucceeded waits (a minute at most) for the execution to end, and
// fails the test unless it succeeded.
func waitSucceeded(ctx context.Context, t *testing.T, e *Executor, arn string) {
	t.Helper()
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var d ExecutionDescription
	for wait.Err() == nil {
		var err error
		if d, err = e.DescribeExecution(ctx, arn); err != nil {
			t.Fatal(err)
		}
		if d.Status != StatusRunning {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if d.Status != StatusSucceeded {
		t.Fatalf("execution %s, want %s", d.Status, StatusSucceeded)
	}
}
