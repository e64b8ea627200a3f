package storetest

import (
	"sync"
	"testing"

	"github.com/keelrun/keel/internal/run"
)

// testCancelOnce: ten concurrent cancels of one run record one
// cancel_requested (issue #18); a cancel of a run already flagged, with
// no pending approval left, writes nothing.
func testCancelOnce(t *testing.T, e *env) {
	r, _ := e.leased()
	before := len(e.checkGapless(e.s, r.ID))
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Go(func() {
			got, _, err := e.s.RequestCancel(e.ctx, r.ID, "carol")
			if err == nil && !got.CancelRequested {
				t.Errorf("cancel %d returned a run without its cancel flag", i)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("cancel %d: %v", i, err)
		}
	}
	evs := e.checkGapless(e.s, r.ID)[before:]
	if types := eventTypes(evs); len(types) != 1 || types[0] != run.EventCancelRequested {
		t.Fatalf("ten cancels appended %v, want one cancel_requested", types)
	}
	snap := e.snap(e.s, r.ID)
	if _, _, err := e.s.RequestCancel(e.ctx, r.ID, "dave"); err != nil {
		t.Fatal(err)
	}
	e.sameSnap(snap, e.snap(e.s, r.ID))
}
