package sweeper_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/aws/sweeper"
	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

type waker struct{ woken []string }

// leasedRun is a store holding run id, leased by a worker.
func leasedRun(t *testing.T, id string) (*sqlite.Store, run.Run) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "keel.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, _, err := st.CreateRun(ctx, run.Run{ID: id, SessionID: "s", Owner: "o", Agent: "a", Request: "r",
		InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()}); err != nil {
		t.Fatal(err)
	}
	lr, err := st.AcquireLease(ctx, id, "worker", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return st, lr
}

func (w *waker) Resume(_ context.Context, ap run.Approval) error {
	w.woken = append(w.woken, ap.ID+":"+string(ap.Status))
	return nil
}

// TestSweepWakesADecidedWait: a run awaiting_approval whose execution
// waits while its approval is already decided (the deciding process died
// before it woke the wait) is woken by the sweep, however young; a
// pending approval, or one without a task token yet, is left alone.
func TestSweepWakesADecidedWait(t *testing.T) {
	cases := []struct {
		name      string
		decide    bool
		token     bool
		wantWoken []string
	}{
		{"decided, token attached: woken", true, true, []string{"ap_1:approved"}},
		{"pending: left to the person", false, true, nil},
		{"decided before its wait attached a token: left to the wait", true, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			const id = "run_wake1"
			st, lr := leasedRun(t, id)
			args := json.RawMessage(`{"a":1}`)
			hash, _ := run.ArgsHash(args)
			if _, err := st.Commit(ctx, store.Commit{RunID: id, Token: lr.Lease.Token,
				Run:          &store.RunPatch{Status: run.StatusAwaitingApproval, ReleaseLease: true},
				NewApprovals: []run.Approval{{ID: "ap_1", Tool: "publish", Mode: run.ModeMutating, Args: args}}}); err != nil {
				t.Fatal(err)
			}
			if tc.token {
				if _, err := st.AttachTaskToken(ctx, id, "ap_1", "tok-1"); err != nil {
					t.Fatal(err)
				}
			}
			if tc.decide {
				if _, err := st.DecideApproval(ctx, store.Decision{RunID: id, ApprovalID: "ap_1", Approve: true, ArgsHash: hash, DecidedBy: "alice"}); err != nil {
					t.Fatal(err)
				}
			}
			w := &waker{}
			x := &executions{status: map[string]string{id: sweeper.StatusRunning}}
			sw := &sweeper.Sweeper{Store: st, Executions: x, Finalizer: &finalizer{}, Wake: w, MinAge: time.Hour}
			rep, err := sw.Sweep(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(w.woken) != len(tc.wantWoken) || (len(w.woken) > 0 && w.woken[0] != tc.wantWoken[0]) {
				t.Fatalf("woke %v, want %v", w.woken, tc.wantWoken)
			}
			if len(tc.wantWoken) > 0 && (len(rep.Repairs) != 1 || rep.Repairs[0].Action != sweeper.ActionWoken ||
				rep.Repairs[0].Found != sweeper.FoundDecisionNotDelivered) {
				t.Fatalf("repairs %+v", rep.Repairs)
			}
			if len(x.started) != 0 {
				t.Fatalf("started %v: a waiting execution needs no other", x.started)
			}
		})
	}
}

// TestSweepWithdrawsAnApprovalAskedAfterCancel: a Step that read the run
// before its cancel asks an approval after it; nothing but a person's
// decision on an action they asked to cancel would end that wait. The
// sweep withdraws it and wakes the wait, so the Step ends the run.
func TestSweepWithdrawsAnApprovalAskedAfterCancel(t *testing.T) {
	ctx := context.Background()
	const id = "run_wake2"
	st, lr := leasedRun(t, id)
	if _, _, err := st.RequestCancel(ctx, id, "alice"); err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"a":1}`)
	if _, err := st.Commit(ctx, store.Commit{RunID: id, Token: lr.Lease.Token,
		Run:          &store.RunPatch{Status: run.StatusAwaitingApproval, ReleaseLease: true},
		NewApprovals: []run.Approval{{ID: "ap_late", Tool: "publish", Mode: run.ModeMutating, Args: args}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AttachTaskToken(ctx, id, "ap_late", "tok-1"); err != nil {
		t.Fatal(err)
	}
	w := &waker{}
	sw := &sweeper.Sweeper{Store: st, Executions: &executions{status: map[string]string{id: sweeper.StatusRunning}},
		Finalizer: &finalizer{}, Wake: w}
	rep, err := sw.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Repairs) != 1 || rep.Repairs[0].Action != sweeper.ActionCancelled || len(w.woken) != 1 || w.woken[0] != "ap_late:cancelled" {
		t.Fatalf("repairs %+v, woke %v", rep.Repairs, w.woken)
	}
	if a, err := st.GetApproval(ctx, id, "ap_late"); err != nil || a.Status != run.ApprovalCancelled {
		t.Fatalf("approval %+v %v, want cancelled", a, err)
	}
}
