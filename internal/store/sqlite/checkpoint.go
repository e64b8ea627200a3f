package sqlite

import (
	"context"
	"sync/atomic"
	"time"
)

// The WAL checkpoint runs beside the writer, not in it. With SQLite's
// automatic checkpoint the COMMIT that takes the WAL past 1,000 pages also
// copies them into the database file and fsyncs it, so under load every
// few group transactions one stalled every caller of its batch behind a
// second fsync and the page copying (bench/load: a twelfth of the
// committer's CPU, and the long tail of its COMMITs). The write handle
// turns the automatic one off (wal_autocheckpoint(0)), and this goroutine
// runs a PASSIVE checkpoint on a read connection once enough writes have
// committed since the last one: PASSIVE takes no lock a writer waits for,
// so the committer goes on appending to the WAL meanwhile. Durability is
// unchanged: a write is durable when its WAL frames are fsynced at COMMIT
// (synchronous=FULL); the checkpoint only moves them into the main file.

// checkpointEvery is the committed writes between two checkpoints: about
// the automatic checkpoint's 1,000 pages for the store's writes (a plain
// step changes a few pages).
const checkpointEvery = 256

type checkpointer struct {
	since atomic.Int64  // committed writes since the last checkpoint
	kick  chan struct{} // buffered 1: a checkpoint is due
	stop  chan struct{}
	done  chan struct{}
	runs  atomic.Int64 // checkpoints run, for tests and stats
}

func (s *Store) startCheckpointer() {
	s.ck = &checkpointer{kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go s.checkpointLoop()
}

// committed counts n writes of a committed transaction, and wakes the
// checkpointer when a checkpoint is due. It never blocks the committer.
func (s *Store) committed(n int) {
	if s.ck.since.Add(int64(n)) < checkpointEvery {
		return
	}
	select {
	case s.ck.kick <- struct{}{}:
	default: // one is already due
	}
}

func (s *Store) checkpointLoop() {
	defer close(s.ck.done)
	for {
		select {
		case <-s.ck.stop:
			return
		case <-s.ck.kick:
		}
		s.ck.since.Store(0)
		s.checkpoint()
	}
}

func (s *Store) checkpoint() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var busy, logFrames, done int64
	if err := s.r.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &logFrames, &done); err != nil {
		// The next one retries; until then the WAL only grows.
		s.log.Warn("sqlite: WAL checkpoint failed", "err", err)
		return
	}
	s.ck.runs.Add(1)
}

// stopCheckpointer waits for a checkpoint in progress and stops the
// goroutine; Close then checkpoints what is left, as the last connection
// to close does.
func (s *Store) stopCheckpointer() {
	if s.ck == nil {
		return
	}
	close(s.ck.stop)
	<-s.ck.done
}
