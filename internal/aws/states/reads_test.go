package states

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"
)

// poolWriter is countingWriter with a read pool of its own on the file,
// as *sqlite.Store has (ReadDB).
type poolWriter struct {
	countingWriter
	r *sql.DB
}

func (w *poolWriter) ReadDB() *sql.DB { return w.r }

// With a Writer that has a read pool, the executor's reads go there: one
// is answered while a write transaction holds the single write
// connection (on that connection it would wait for the transaction, and
// here the transaction ends only after the read).
func TestReadsDoNotWaitForTheWriteConnection(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "k.db")
	open := func(max int) *sql.DB {
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(max)
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	wdb := open(1)
	w := &poolWriter{countingWriter: countingWriter{db: wdb}, r: open(4)}
	st, err := NewStoreWith(ctx, wdb, w)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	e, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	m, err := Load([]byte(`{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":3600,"End":true}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	arn, err := e.Register(ctx, "m", m)
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.StartExecution(ctx, StartExecutionInput{StateMachineArn: arn, Name: "x"})
	if err != nil {
		t.Fatal(err)
	}

	holding, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- w.WriteTx(context.Background(), func(tx *sql.Tx) error {
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	read := make(chan error, 1)
	go func() {
		d, err := e.DescribeExecution(ctx, out.ExecutionArn)
		if err == nil && d.Status != StatusRunning {
			t.Errorf("status %s, want %s", d.Status, StatusRunning)
		}
		read <- err
	}()
	// Not a timing bound: the deadlock detector of a read that went
	// through the held connection.
	select {
	case err := <-read:
		close(release)
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("DescribeExecution waited for the write transaction: the read went through the write connection")
	}
	if err := <-held; err != nil {
		t.Fatal(err)
	}
}
