package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

func testEvents(t *testing.T, e *env) {
	r := e.create()
	for i := range 5 {
		e.clock.Advance(time.Millisecond)
		seqs, err := e.s.AppendEvents(e.ctx, r.ID, []run.Event{
			ev(run.EventToolProgress, fmt.Sprintf(`{"i":%d,"half":0}`, i)),
			{Type: run.EventToolProgress, Data: json.RawMessage(fmt.Sprintf(`{"i":%d,"half":1}`, i)), OperationID: "op1", PlanItemID: "p1"},
		})
		must(t, err)
		exp := []int64{int64(2 + 2*i), int64(3 + 2*i)}
		if !reflect.DeepEqual(seqs, exp) {
			t.Fatalf("append %d: seqs %v, want %v", i, seqs, exp)
		}
	}
	evs := e.checkGapless(e.s, r.ID)
	if len(evs) != 11 {
		t.Fatalf("%d events, want 11", len(evs))
	}
	if evs[4].Data == nil || string(evs[4].Data) != `{"i":1,"half":1}` || evs[4].OperationID != "op1" || evs[4].PlanItemID != "p1" ||
		!evs[4].Time.Equal(epoch.Add(2*time.Millisecond)) {
		t.Fatalf("event 5 = %s", dump(evs[4]))
	}
	cases := []struct {
		name  string
		after int64
		limit int
		want  []int64
	}{
		{"FromStart", 0, 3, []int64{1, 2, 3}},
		{"Middle", 4, 2, []int64{5, 6}},
		{"Tail", 9, 10, []int64{10, 11}},
		{"PastEnd", 11, 10, nil},
		{"DefaultLimit", 0, 0, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			page, err := e.s.ReadEvents(e.ctx, r.ID, tc.after, tc.limit)
			must(t, err)
			var got []int64
			for _, x := range page {
				got = append(got, x.Seq)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ReadEvents(after %d, limit %d) = %v, want %v", tc.after, tc.limit, got, tc.want)
			}
		})
	}
	t.Run("UnknownRun", func(t *testing.T) {
		_, err := e.s.ReadEvents(e.ctx, "run_nope", 0, 10)
		wantErr(t, err, store.ErrNotFound)
		_, err = e.s.AppendEvents(e.ctx, "run_nope", []run.Event{ev(run.EventToolProgress, "")})
		wantErr(t, err, store.ErrNotFound)
	})
}

// testConcurrentAppenders: 50 goroutines append at once; the log stays
// gapless with no duplicate and every append lands exactly once.
func testConcurrentAppenders(t *testing.T, e *env) {
	const n = 50
	r := e.create()
	var wg sync.WaitGroup
	start := make(chan struct{})
	seqs := make([][]int64, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			seqs[i], errs[i] = e.s.AppendEvents(e.ctx, r.ID, []run.Event{ev(run.EventToolProgress, fmt.Sprintf(`{"g":%d}`, i))})
		}()
	}
	close(start)
	wg.Wait()
	var got []int64
	for i := range n {
		must(t, errs[i])
		if len(seqs[i]) != 1 {
			t.Fatalf("appender %d got seqs %v", i, seqs[i])
		}
		got = append(got, seqs[i][0])
	}
	sort.Slice(got, func(a, b int) bool { return got[a] < got[b] })
	for i, s := range got {
		if s != int64(i+2) {
			t.Fatalf("returned seqs %v are not 2..%d", got, n+1)
		}
	}
	evs := e.checkGapless(e.s, r.ID)
	if len(evs) != n+1 {
		t.Fatalf("%d events, want %d", len(evs), n+1)
	}
	seen := map[int]int64{}
	for _, x := range evs[1:] {
		var d struct{ G int }
		must(t, json.Unmarshal(x.Data, &d))
		if prev, dup := seen[d.G]; dup {
			t.Fatalf("appender %d stored twice (seqs %d, %d)", d.G, prev, x.Seq)
		}
		seen[d.G] = x.Seq
		if seqs[d.G][0] != x.Seq {
			t.Fatalf("appender %d was told seq %d, stored at %d", d.G, seqs[d.G][0], x.Seq)
		}
	}
}

// testConcurrentLeaseTakers: two owners race for each of several runs;
// exactly one wins each race and the loser sees ErrLeaseHeld.
func testConcurrentLeaseTakers(t *testing.T, e *env) {
	for round := range 10 {
		r := e.create()
		var wg sync.WaitGroup
		start := make(chan struct{})
		var res [2]run.Run
		var errs [2]error
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				res[i], errs[i] = e.s.AcquireLease(e.ctx, r.ID, fmt.Sprintf("owner-%d", i), time.Minute)
			}()
		}
		close(start)
		wg.Wait()
		winners := 0
		for i := range 2 {
			switch {
			case errs[i] == nil:
				winners++
				if res[i].Lease.Token != 1 || res[i].Lease.Owner != fmt.Sprintf("owner-%d", i) {
					t.Fatalf("round %d: winner's lease %+v", round, res[i].Lease)
				}
			case errors.Is(errs[i], store.ErrLeaseHeld):
			default:
				t.Fatalf("round %d: taker %d: %v", round, i, errs[i])
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d winners, want exactly 1", round, winners)
		}
	}
}

// testTwoStores: two Stores open on one database at once see each other's
// writes and still keep one writer and a gapless log.
func testTwoStores(t *testing.T, e *env) {
	s2 := e.openStore()
	r := e.create()
	got, err := s2.GetRun(e.ctx, r.ID)
	must(t, err)
	if got.ID != r.ID {
		t.Fatalf("second store reads %q", got.ID)
	}
	l, err := s2.AcquireLease(e.ctx, r.ID, "w-s2", time.Minute)
	must(t, err)
	_, err = e.s.AcquireLease(e.ctx, r.ID, "w-s1", time.Minute)
	wantErr(t, err, store.ErrLeaseHeld)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 20 {
		for _, s := range []store.Store{e.s, s2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.AppendEvents(e.ctx, r.ID, []run.Event{ev(run.EventToolProgress, fmt.Sprintf(`{"i":%d}`, i))})
				errs <- err
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	if evs := e.checkGapless(e.s, r.ID); len(evs) != 41 {
		t.Fatalf("%d events, want 41", len(evs))
	}
	_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: l.Lease.Token, Run: &store.RunPatch{Status: run.StatusRunning}})
	must(t, err)
	got, err = s2.GetRun(e.ctx, r.ID)
	must(t, err)
	if got.Status != run.StatusRunning {
		t.Fatalf("second store sees status %s", got.Status)
	}
}

// testConcurrentReservations: many reservations race against one limit; the
// sum held never passes it, and exactly as many as fit succeed.
func testConcurrentReservations(t *testing.T, e *env) {
	r := e.create(func(r *run.Run) {
		r.Limits = run.Limits{MaxTokens: 1000, MaxSpendMicroUSD: 0, MaxToolCalls: 0}
	})
	const n = 30
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = e.s.Reserve(e.ctx, r.ID, store.Amounts{Tokens: 100, SpendMicroUSD: 5})
		}()
	}
	close(start)
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, store.ErrBudgetExceeded):
		default:
			t.Fatal(err)
		}
	}
	got, err := e.s.GetRun(e.ctx, r.ID)
	must(t, err)
	if ok != 10 || got.Budget.TokensReserved != 1000 || got.Budget.SpendReservedMicroUSD != 50 {
		t.Fatalf("%d reservations succeeded, budget %+v; want 10 and 1000 tokens held", ok, got.Budget)
	}
}
