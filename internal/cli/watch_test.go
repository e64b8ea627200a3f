package cli

import (
	"bufio"
	"context"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// syncBuffer is a command's output read by the test while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWatchReconnects: dev stops while `run --watch` follows a run and
// comes back on the same address; the watch says it lost the runtime,
// reconnects, and goes on from its cursor to the run's end, each event
// once.
func TestWatchReconnects(t *testing.T) {
	e := newTestEnv(t, true)
	ctx := context.Background()
	var out, errOut syncBuffer
	env := map[string]string{"KEEL_URL": e.srv.URL, "KEEL_TOKEN": token}
	c := &cli{prog: "shop", stdin: bufio.NewReader(strings.NewReader("")), stdout: &out, stderr: &errOut,
		getenv: func(k string) string { return env[k] }}
	done := make(chan int, 1)
	go func() { done <- execute(ctx, []string{"run", "--watch", "research", "write it"}, c) }()
	for !strings.Contains(out.String(), "answer with: shop approve") {
		select {
		case code := <-done:
			t.Fatalf("watch ended (%d) before the approval:\n%s\n%s", code, out.String(), errOut.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	r := e.onlyRun()

	// dev goes away: every connection cut, nothing listening.
	addr := e.srv.Listener.Addr().String()
	e.srv.CloseClientConnections()
	e.srv.Close()
	for !strings.Contains(errOut.String(), "reconnecting from event") {
		select {
		case code := <-done:
			t.Fatalf("watch ended (exit %d) when dev went away, instead of reconnecting:\n%s", code, errOut.String())
		case <-time.After(5 * time.Millisecond):
		}
	}

	// dev is back on the same address, and the person approves.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	back := httptest.NewUnstartedServer(e.srv.Config.Handler)
	back.Listener.Close()
	back.Listener = ln
	back.Start()
	t.Cleanup(back.Close)
	a, err := e.st.GetApproval(ctx, r.RunID, "apr_1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.DecideApproval(ctx, store.Decision{RunID: r.RunID, ApprovalID: a.ID, Approve: true, ArgsHash: a.ArgsHash, DecidedBy: "cli-user"}); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(errOut.String(), "reconnected to ") || !strings.Contains(out.String(), "completed") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	if n := strings.Count(out.String(), "waiting for approval apr_1"); n != 1 {
		t.Errorf("the approval shown %d times, want once (resumed from the cursor):\n%s", n, out.String())
	}
}

// raiseApproval is the approval of a run paused at its spend limit.
func raiseApproval(t *testing.T) run.Approval {
	t.Helper()
	args := []byte(`{"limit":"max_spend","limit_now":10000,"raise_by":20000,"limit_after":30000}`)
	h, err := run.ArgsHash(args)
	if err != nil {
		t.Fatal(err)
	}
	return run.Approval{ID: "apr_limit_max_spend_10000", Tool: harness.RaiseLimitTool, Mode: run.ModeMutating, Args: args, ArgsHash: h}
}

// TestBudgetPauseOffersRaise: a run paused at a limit is answered with
// raise (or raise --stop), not approve or deny: in run --watch and in
// show.
func TestBudgetPauseOffersRaise(t *testing.T) {
	ap := raiseApproval(t)
	var out strings.Builder
	rd := newRenderer(&out, "shop", "", "run_1")
	rd.event(api.Event{Seq: 1, Type: run.EventApprovalRequested, Data: data(map[string]any{"approval_id": ap.ID, "tool": ap.Tool, "args_hash": ap.ArgsHash, "args": ap.Args})})
	checkRaise(t, "run --watch", out.String(), "answer with: shop raise run_1", "shop raise run_1 --stop --reason")

	e := newTestEnv(t, false)
	r := e.storedRun(t, store.Commit{Run: &store.RunPatch{Status: run.StatusRunning}},
		store.Commit{Run: &store.RunPatch{Status: run.StatusAwaitingApproval}, NewApprovals: []run.Approval{ap}})
	code, show, errOut := e.keel("", "show", r)
	if code != exitOK {
		t.Fatalf("show: exit %d %s", code, errOut)
	}
	checkRaise(t, "show", show, "raise "+r+" ", "raise "+r+" --stop --reason")
}

func checkRaise(t *testing.T, where, out string, want ...string) {
	t.Helper()
	for _, w := range append(want, "max_spend: 10000 → 30000") {
		if !strings.Contains(out, w) {
			t.Errorf("%s: no %q in\n%s", where, w, out)
		}
	}
	if strings.Contains(out, " approve ") || strings.Contains(out, " deny ") {
		t.Errorf("%s offers approve/deny for a pause at a limit:\n%s", where, out)
	}
}

// TestShowNeedsHumanSettle: show on a needs_human run names the operation
// a person must settle and the command that does it.
func TestShowNeedsHumanSettle(t *testing.T) {
	e := newTestEnv(t, false)
	args := []byte(`{"to":"ada@example.com"}`)
	h, _ := run.ArgsHash(args)
	r := e.storedRun(t,
		store.Commit{Run: &store.RunPatch{Status: run.StatusRunning}, PlanItems: []run.PlanItem{{ID: "pi_1", Order: 1, Tool: "send_email", Args: args, ArgsHash: h, Mode: run.ModeMutating, Status: run.PlanRunning}},
			NewOperations: []run.Operation{{ID: "op_1", PlanItemID: "pi_1", Tool: "send_email", Destination: "outbox", Args: args, ArgsHash: h, IdempotencyKey: "op_1"}}},
		store.Commit{Run: &store.RunPatch{Status: run.StatusNeedsHuman}, OperationUpdates: []store.OperationUpdate{{ID: "op_1", Status: run.OpNeedsHuman, Error: "timeout"}}})
	code, out, errOut := e.keel("", "show", r)
	if code != exitOK || !strings.Contains(out, "op_1 needs a person: ask outbox") ||
		!strings.Contains(out, "keel settle "+r+" op_1 --happened|--not-happened|--give-up --reason") {
		t.Fatalf("show: exit %d\n%s%s", code, out, errOut)
	}
}

// storedRun creates a run of cli-user and commits cs to it, each under a
// lease of its own; it returns the run's id.
func (e *testEnv) storedRun(t *testing.T, cs ...store.Commit) string {
	t.Helper()
	ctx := context.Background()
	r, _, err := e.st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: run.NewID("ses"), Owner: "cli-user", Agent: "research", Request: "x", InputPolicy: run.InputQueue})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		l, err := e.st.AcquireLease(ctx, r.ID, "w", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		c.RunID, c.Token, c.Run.ReleaseLease = r.ID, l.Lease.Token, true
		for i := range c.NewApprovals {
			c.NewApprovals[i].RunID, c.NewApprovals[i].SessionID = r.ID, r.SessionID
		}
		if _, err := e.st.Commit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	return r.ID
}
