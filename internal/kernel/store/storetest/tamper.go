package storetest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// Tamperer changes a run's stored events behind the store's back, the way
// someone with write access to the database (not to Keel) would.
type Tamperer interface {
	// EditEventData replaces the data of the event at seq.
	EditEventData(ctx context.Context, runID string, seq int64, data []byte) error
	// DeleteEvent removes the event at seq.
	DeleteEvent(ctx context.Context, runID string, seq int64) error
	// SwapEvents moves the event at seq a to seq b and the one at b to a.
	SwapEvents(ctx context.Context, runID string, a, b int64) error
}

// CommitHashes is implemented by the Tamperer of a store that keeps only
// the hash of each append's (commit's) last event and derives the others
// on read from the one before (SQLite). Every change is still detected,
// and named as the span of the append it is in: from the append's first
// derived event through the stored hash that failed (ChainProblem.Through),
// since the events before that hash whatever they hold.
type CommitHashes interface{ CommitHashesOnly() }

// TamperOpener is an Opener that also returns a Tamperer of the database.
type TamperOpener func(t *testing.T) (Open, Tamperer)

// RunTamper checks that the event chain detects and names each kind of
// tampering on the backend: an edited, a deleted (in the middle and at the
// end) and a reordered event, through store.ReadAudit.
func RunTamper(t *testing.T, newDB TamperOpener) {
	cases := []struct {
		name   string
		tamper func(ctx context.Context, tm Tamperer, runID string) error
		seq    int64
		kind   string
		// span is the [Seq, Through] a CommitHashes store names (zero: seq
		// alone). Appends are seqs 1..3 (with the run's first event) and 4..5.
		span [2]int64
	}{
		{"Intact", func(context.Context, Tamperer, string) error { return nil }, 0, "", [2]int64{}},
		{"Edit", func(ctx context.Context, tm Tamperer, id string) error {
			return tm.EditEventData(ctx, id, 3, []byte(`{"amount":1000000}`))
		}, 3, run.ChainEdited, [2]int64{2, 3}},
		{"EditFirstOfAppend", func(ctx context.Context, tm Tamperer, id string) error {
			return tm.EditEventData(ctx, id, 2, []byte(`{"amount":1000000}`))
		}, 2, run.ChainEdited, [2]int64{2, 3}},
		{"Delete", func(ctx context.Context, tm Tamperer, id string) error { return tm.DeleteEvent(ctx, id, 3) }, 4, run.ChainDeleted, [2]int64{}},
		{"DeleteLast", func(ctx context.Context, tm Tamperer, id string) error { return tm.DeleteEvent(ctx, id, 5) }, 4, run.ChainTruncated, [2]int64{}},
		// Seq 3 ends the first append and 4 starts the second: a
		// CommitHashes store finds the move at 4, the first stored hash
		// from 3 on (the old 3, which follows 2, not the new 3), and names
		// 2..4: seq 2 and the new 3 both have derived hashes.
		{"Reorder", func(ctx context.Context, tm Tamperer, id string) error { return tm.SwapEvents(ctx, id, 3, 4) }, 3, run.ChainReordered, [2]int64{2, 4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			open, tm := newDB(t)
			seq, through := tc.seq, int64(0)
			if _, ok := tm.(CommitHashes); ok && tc.span[0] != 0 {
				seq, through = tc.span[0], tc.span[1]
			}
			e := &env{t: t, ctx: t.Context(), open: open, clock: NewClock(epoch)}
			e.s = e.openStore()
			r := e.create()
			for i := 0; i < 2; i++ {
				e.clock.Advance(1)
				_, err := e.s.AppendEvents(e.ctx, r.ID, []run.Event{
					ev(run.EventInputReceived, `{"amount":10,"i":`+string(rune('0'+i))+`}`),
					ev(run.EventToolProgress, `{"note":"café"}`)})
				must(t, err)
			}
			must(t, tc.tamper(e.ctx, tm, r.ID))
			a, err := store.ReadAudit(e.ctx, e.s, r.ID)
			must(t, err)
			if tc.kind == "" {
				if len(a.Problems) != 0 || len(a.Events) != 5 || a.Run.LastHash != a.Events[4].Hash {
					b, _ := json.Marshal(a)
					t.Fatalf("intact log: %s", b)
				}
				return
			}
			if len(a.Problems) == 0 {
				t.Fatalf("%s not detected", tc.name)
			}
			if p := a.Problems[0]; p.Seq != seq || p.Through != through || p.Kind != tc.kind {
				t.Fatalf("first problem %v (through %d), want %s at seq %d through %d (all: %v)", p, p.Through, tc.kind, seq, through, a.Problems)
			}
		})
	}
}
