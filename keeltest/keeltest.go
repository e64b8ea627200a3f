// Package keeltest runs your agents on a real Keel in tests: the embedded
// runtime in the test's own process ([Start]), or your program's `dev` in
// a child process that a test can SIGKILL and restart ([StartProgram]),
// with a few calls of the HTTP API a test needs (start a run, wait for a
// status or an approval, decide it, read the event log).
//
// Everything is real: SQLite, the local state machine, the operation
// protocol, the fault points (KEEL_FAULTPOINT=after_dispatch makes the
// program SIGKILL itself right after an effect's dispatch). Waits are
// bounded by a hang guard (two minutes by default), never by a timing
// assertion.
package keeltest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/keelrun/keel"
	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/kernel/run"
)

// HangGuard bounds every wait of this package: a test that hangs fails
// after it instead of at the test binary's timeout. A constant: a test
// that needs another bound wraps its own wait.
const HangGuard = 2 * time.Minute

// Run is a run as the API shows it.
type Run struct {
	ID, Agent, Status, Output, Error string
}

// Approval is a proposed action waiting for (or given) a decision.
type Approval struct {
	ID, Tool, Mode, Status string
	Args                   json.RawMessage
	ArgsHash               string
}

// Event is one line of a run's event log.
type Event struct {
	Seq         int64
	Type        string
	OperationID string
	Data        json.RawMessage
}

// Runtime is a Keel API under test.
type Runtime struct {
	// URL and Token are what KEEL_URL and KEEL_TOKEN would be.
	URL, Token string
	c          *client.Client
}

// Start runs agents on the embedded runtime in this process — keel.Dev on
// a fresh data directory — until the test ends. KEEL_* variables of the
// test's environment are not read.
func Start(t testing.TB, agents ...keel.Agent) *Runtime {
	t.Helper()
	d, err := keel.Dev(context.Background(), keel.DevOptions{DataDir: t.TempDir()}, agents...)
	if err != nil {
		t.Fatalf("keeltest: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return connect(t, d.URL, d.Token)
}

func connect(t testing.TB, url, token string) *Runtime {
	t.Helper()
	c, err := client.New(url, token, nil)
	if err != nil {
		t.Fatalf("keeltest: %v", err)
	}
	return &Runtime{URL: url, Token: token, c: c}
}

// RunOption sets a field of a new run; InSession and WithInputPolicy make
// them.
type RunOption struct{ set func(*api.CreateRunRequest) }

// InSession makes the run part of session id (created by its first run):
// confirm-once grants hold across the runs of a session.
func InSession(id string) RunOption {
	return RunOption{func(r *api.CreateRunRequest) { r.SessionID = id }}
}

// WithInputPolicy sets the run's input policy (reject, queue, interrupt,
// rollback) over its agent's.
func WithInputPolicy(p string) RunOption {
	return RunOption{func(r *api.CreateRunRequest) { r.InputPolicy = run.InputPolicy(p) }}
}

// StartRun creates a run of agent with input and returns its id.
func (r *Runtime) StartRun(t testing.TB, agent, input string, opts ...RunOption) string {
	t.Helper()
	req := api.CreateRunRequest{Agent: agent, Input: input}
	for _, o := range opts {
		if o.set != nil {
			o.set(&req)
		}
	}
	got, _, err := r.c.CreateRun(context.Background(), req, run.NewID("key"))
	if err != nil {
		t.Fatalf("keeltest: start a run of %s: %v", agent, err)
	}
	return got.RunID
}

// Run reads a run.
func (r *Runtime) Run(t testing.TB, id string) Run {
	t.Helper()
	got, err := r.c.GetRun(context.Background(), id)
	if err != nil {
		t.Fatalf("keeltest: run %s: %v", id, err)
	}
	return Run{ID: got.RunID, Agent: got.Agent, Status: string(got.Status), Output: got.Output, Error: got.Error}
}

// Children lists the child runs that the run's sub-agent calls started
// (keel runs --parent), newest first.
func (r *Runtime) Children(t testing.TB, id string) []Run {
	t.Helper()
	list, err := r.c.ListRuns(context.Background(), client.ListRunsOptions{Parent: id, Limit: 1000})
	if err != nil {
		t.Fatalf("keeltest: children of %s: %v", id, err)
	}
	out := make([]Run, 0, len(list.Runs))
	for _, got := range list.Runs {
		out = append(out, Run{ID: got.RunID, Agent: got.Agent, Status: string(got.Status), Output: got.Output, Error: got.Error})
	}
	return out
}

// Cancel asks the run to stop, as `keel cancel` does.
func (r *Runtime) Cancel(t testing.TB, id string) {
	t.Helper()
	if _, err := r.c.Cancel(context.Background(), id); err != nil {
		t.Fatalf("keeltest: cancel %s: %v", id, err)
	}
}

// WaitFor waits until the run has one of statuses (completed, failed,
// needs_human, awaiting_approval, ...) and returns it. A final status not
// in statuses fails the test at once, with the run's error.
func (r *Runtime) WaitFor(t testing.TB, id string, statuses ...string) Run {
	t.Helper()
	var last Run
	err := wait(func() (bool, error) {
		got, err := r.c.GetRun(context.Background(), id)
		if err != nil {
			return false, err
		}
		last = Run{ID: got.RunID, Agent: got.Agent, Status: string(got.Status), Output: got.Output, Error: got.Error}
		if slices.Contains(statuses, last.Status) {
			return true, nil
		}
		if got.Status.Terminal() || got.Status == run.StatusNeedsHuman {
			return false, errFinal
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("keeltest: run %s is %s (error %q), want %v: %v", id, last.Status, last.Error, statuses, err)
	}
	return last
}

var errFinal = errors.New("the run ended")

// WaitApproval waits for the run's first pending approval.
func (r *Runtime) WaitApproval(t testing.TB, id string) Approval {
	t.Helper()
	var found Approval
	err := wait(func() (bool, error) {
		aps, err := r.c.ListApprovals(context.Background(), id)
		if err != nil {
			return false, err
		}
		for _, a := range aps {
			if a.Status == run.ApprovalPending {
				found = approvalView(a)
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("keeltest: no approval of run %s: %v", id, err)
	}
	return found
}

// Approvals lists the run's approvals now, pending or decided, without
// waiting.
func (r *Runtime) Approvals(t testing.TB, id string) []Approval {
	t.Helper()
	aps, err := r.c.ListApprovals(context.Background(), id)
	if err != nil {
		t.Fatalf("keeltest: approvals of %s: %v", id, err)
	}
	out := make([]Approval, 0, len(aps))
	for _, a := range aps {
		out = append(out, approvalView(a))
	}
	return out
}

func approvalView(a api.Approval) Approval {
	return Approval{ID: a.ApprovalID, Tool: a.Tool, Mode: string(a.Mode), Status: string(a.Status), Args: a.Args, ArgsHash: a.ArgsHash}
}

// Approve approves ap exactly as it was shown (its args hash), as a
// person would with `keel approve`.
func (r *Runtime) Approve(t testing.TB, runID string, ap Approval) {
	t.Helper()
	r.decide(t, runID, ap, api.DecisionApprove)
}

// Deny denies ap.
func (r *Runtime) Deny(t testing.TB, runID string, ap Approval) {
	t.Helper()
	r.decide(t, runID, ap, api.DecisionDeny)
}

func (r *Runtime) decide(t testing.TB, runID string, ap Approval, d string) {
	t.Helper()
	_, err := r.c.Decide(context.Background(), runID, ap.ID, api.DecisionRequest{Decision: d, ArgsHash: ap.ArgsHash, Reason: "keeltest"})
	if err != nil {
		t.Fatalf("keeltest: %s %s: %v", d, ap.ID, err)
	}
}

// Events reads the whole event log of a run.
func (r *Runtime) Events(t testing.TB, id string) []Event {
	t.Helper()
	var out []Event
	var after int64
	for {
		page, err := r.c.Events(context.Background(), id, after, 1000)
		if err != nil {
			t.Fatalf("keeltest: events of %s: %v", id, err)
		}
		for _, e := range page.Events {
			out = append(out, Event{Seq: e.Seq, Type: string(e.Type), OperationID: e.OperationID, Data: e.Data})
		}
		if len(page.Events) == 0 {
			return out
		}
		after = page.NextAfter
	}
}

// Count returns how many events of the log have type typ.
func Count(events []Event, typ string) int {
	n := 0
	for _, e := range events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// wait polls cond until it is true, fails for good (errFinal), or the hang
// guard runs out. Transport errors are retried: a program under test may
// be down between a kill and its restart.
func wait(cond func() (bool, error)) error {
	deadline := time.Now().Add(HangGuard)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		switch {
		case ok:
			return nil
		case errors.Is(err, errFinal):
			return err
		case err != nil:
			last = err
		}
		time.Sleep(20 * time.Millisecond)
	}
	if last != nil {
		return last
	}
	return errors.New("gave up waiting (keeltest.HangGuard)")
}
