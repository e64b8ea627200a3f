package sweeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/stepfunctions"
)

// ErrNoExecution is what Executions.ExecutionStatus returns for a name no
// execution has.
var ErrNoExecution = errors.New("sweeper: no such execution")

// Execution statuses, as Step Functions names them.
const (
	StatusRunning = "RUNNING"
)

// Runs lists and reads runs.
type Runs interface {
	ListRuns(ctx context.Context, q store.ListRunsQuery) (store.RunPage, error)
	GetRun(ctx context.Context, id string) (run.Run, error)
}

// Log appends the sweeper's events and reads a run's earlier repairs.
type Log interface {
	AppendEvents(ctx context.Context, runID string, events []run.Event) ([]int64, error)
	ReadEvents(ctx context.Context, runID string, afterSeq int64, limit int) ([]run.Event, error)
}

// Approvals reads a run's approvals, to find a decision whose wake was
// lost.
type Approvals interface {
	ListApprovals(ctx context.Context, runID string) ([]run.Approval, error)
}

// Store is what the sweeper reads and writes: store.Store satisfies it.
type Store interface {
	Runs
	Log
	Approvals
}

// Waker delivers a recorded decision to the wait that holds its task
// token (roles.Resumer); waking twice is harmless.
type Waker interface {
	Resume(ctx context.Context, approval run.Approval) error
}

var _ Store = store.Store(nil)

// Executions describes and starts executions of the run state machine.
type Executions interface {
	// ExecutionStatus returns the status (RUNNING, SUCCEEDED, FAILED,
	// TIMED_OUT, ABORTED, ...) of the execution named name, or
	// ErrNoExecution.
	ExecutionStatus(ctx context.Context, name string) (string, error)
	// StartExecution starts the execution named name with input; an
	// execution that already exists by that name counts as started.
	StartExecution(ctx context.Context, name, input string) error
}

// Finalizer ends a run as failed with a reason (the harness's Finalize:
// idempotent, a no-op on a finished run).
type Finalizer interface {
	Finalize(ctx context.Context, runID, errMsg string) (run.Run, error)
}

// Sweeper compares runs with their executions; see the package doc.
type Sweeper struct {
	Store      Store
	Executions Executions
	Finalizer  Finalizer
	// Wake, when set, delivers decisions whose wake was lost: a run
	// awaiting_approval whose execution is running but whose approval a
	// person already decided (the process that recorded the decision died
	// before it woke the wait).
	Wake Waker
	// MinAge: a run changed less than MinAge ago is left alone (0: none).
	MinAge time.Duration
	// MaxResumes bounds the resumes of one run before it is finalized
	// instead (default DefaultMaxResumes).
	MaxResumes int
	// Retirement, when set, retires the step function versions no live
	// run uses after each sweep (Report.Versions).
	Retirement *Retirement
	// Clock is the time source (default time.Now).
	Clock  func() time.Time
	Logger *slog.Logger
}

// DefaultMaxResumes is how many times the sweeper resumes one run.
const DefaultMaxResumes = 3

// maxGenerations bounds the probe for the latest generation.
const maxGenerations = 10000

// Actions a repair records.
const (
	ActionStarted   = "started"
	ActionResumed   = "resumed"
	ActionFinalized = "finalized"
	ActionWoken     = "woken"
)

// FoundDecisionNotDelivered: the run waits on an approval that is decided.
const FoundDecisionNotDelivered = "decision_not_delivered"

// Repair is one run the sweeper repaired (or tried to).
type Repair struct {
	RunID        string `json:"run_id"`
	Found        string `json:"found"`
	Action       string `json:"action"`
	Execution    string `json:"execution,omitempty"`
	NewExecution string `json:"new_execution,omitempty"`
	Reason       string `json:"reason,omitempty"`
	Error        string `json:"error,omitempty"`
}

// Report is what one sweep did.
type Report struct {
	Checked int      `json:"checked"`
	Repairs []Repair `json:"repairs"`
	Errors  int      `json:"errors"`
	// Versions: what became of each published step function version
	// (only with a Retirement).
	Versions []VersionReport `json:"versions,omitempty"`
}

// unfinished are the statuses a run moves out of only while an execution
// drives it. needs_human is parked for a person, not for an execution.
var unfinished = []run.Status{run.StatusCreated, run.StatusPlanned, run.StatusRunning, run.StatusAwaitingApproval}

// Sweep checks every unfinished run once. It returns an error only when
// the runs could not be listed; a run that could not be repaired is
// counted in Report.Errors (with its Repair.Error) and tried again by the
// next sweep.
func (s *Sweeper) Sweep(ctx context.Context) (Report, error) {
	rep := Report{Repairs: []Repair{}}
	for _, st := range unfinished {
		q := store.ListRunsQuery{Status: st, Limit: store.MaxRunsPerPage}
		for {
			page, err := s.Store.ListRuns(ctx, q)
			if err != nil {
				return rep, fmt.Errorf("sweeper: list %s runs: %w", st, err)
			}
			for _, r := range page.Runs {
				rep.Checked++
				rp, repaired, err := s.sweepRun(ctx, r)
				if err != nil {
					rp.Error = err.Error()
					rep.Errors++
					s.log().WarnContext(ctx, "sweep: repair failed", "run_id", r.ID, "found", rp.Found, "action", rp.Action, "err", err)
				}
				if repaired || err != nil {
					rep.Repairs = append(rep.Repairs, rp)
				}
				if repaired && err == nil {
					s.log().InfoContext(ctx, "sweep: repaired run", "run_id", r.ID, "found", rp.Found, "action", rp.Action,
						"execution", rp.NewExecution)
				}
			}
			if page.NextPageToken == "" {
				break
			}
			q.PageToken = page.NextPageToken
		}
	}
	if s.Retirement != nil {
		vs, err := s.retire(ctx)
		rep.Versions = vs
		if err != nil {
			// Retiring can wait for the next sweep; the repairs stand.
			rep.Errors++
			s.log().WarnContext(ctx, "sweep: retiring versions failed", "err", err)
		}
	}
	return rep, nil
}

// Run sweeps at once and then every interval until ctx ends.
func (s *Sweeper) Run(ctx context.Context, interval time.Duration) {
	for {
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log().WarnContext(ctx, "sweep failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// unstartedChild: a child run a sub-agent call created, not started yet.
// MinAge leaves young runs to the starter that created them (the API's);
// on AWS nothing but the sweeper starts a child (the step role does not
// hold states:StartExecution), so waiting would only delay it. Where the
// creator does start it (keel dev), both name the execution by the run
// id with the same input, and a start repeated that way is the same one.
func unstartedChild(r run.Run) bool {
	return r.Caller.RunID != "" && r.Status == run.StatusCreated
}

func (s *Sweeper) sweepRun(ctx context.Context, r run.Run) (Repair, bool, error) {
	rp := Repair{RunID: r.ID}
	// A young run is left to the process that just moved it, except for
	// a lost wake: delivering a decision twice is harmless, and the
	// decision itself made the run young.
	young := s.MinAge > 0 && s.now().Sub(r.UpdatedAt) < s.MinAge && !unstartedChild(r)
	if young && r.Status != run.StatusAwaitingApproval {
		return rp, false, nil
	}
	gen, status, err := s.latest(ctx, r.ID)
	if err != nil {
		return rp, false, err
	}
	if status == StatusRunning {
		return s.wakeDecided(ctx, r, gen)
	}
	if young {
		return rp, false, nil
	}
	// Read the run again: it may have finished while its executions were
	// described (Finalize, then the execution's end).
	if r, err = s.Store.GetRun(ctx, r.ID); err != nil {
		return rp, false, err
	}
	if r.Status.Terminal() || r.Status == run.StatusNeedsHuman {
		return rp, false, nil
	}
	if r.Lease.Owner != "" && r.Lease.Expiry.After(s.now()) {
		// A worker still holds the run (a step of a stopped execution
		// finishing its work): a new execution's Step would only wait for
		// the lease. The next sweep looks again.
		return rp, false, nil
	}
	if gen < 0 {
		rp.Found, rp.Action, rp.NewExecution = "no_execution", ActionStarted, stepfunctions.ExecutionName(r.ID, 0)
		if err := s.Executions.StartExecution(ctx, rp.NewExecution, stepfunctions.ExecutionInput(r.ID, 0)); err != nil {
			return rp, true, err
		}
		return rp, true, s.record(ctx, r, rp)
	}
	rp.Found, rp.Execution = "execution_"+strings.ToLower(status), stepfunctions.ExecutionName(r.ID, gen)
	resumes, err := s.resumes(ctx, r.ID)
	if err != nil {
		return rp, false, err
	}
	if max := s.maxResumes(); resumes >= max {
		rp.Action = ActionFinalized
		rp.Reason = fmt.Sprintf("sweeper: execution %s ended %s while the run was %s, after %d resumes", rp.Execution, status, r.Status, resumes)
		if err := s.record(ctx, r, rp); err != nil {
			return rp, true, err
		}
		_, err := s.Finalizer.Finalize(ctx, r.ID, rp.Reason)
		return rp, true, err
	}
	rp.Action, rp.NewExecution = ActionResumed, stepfunctions.ExecutionName(r.ID, gen+1)
	rp.Reason = fmt.Sprintf("execution %s ended %s while the run was %s", rp.Execution, status, r.Status)
	if err := s.Executions.StartExecution(ctx, rp.NewExecution, stepfunctions.ExecutionInput(r.ID, gen+1)); err != nil {
		return rp, true, err
	}
	return rp, true, s.record(ctx, r, rp)
}

// wakeDecided repairs a lost wake: the run is awaiting_approval, its
// execution runs (waits), and the approval holding the wait's task token
// — the newest one, since each wait attaches its token to the approval it
// asks — was decided or cancelled. The decision is durable; only its
// delivery was lost, so it is delivered again.
func (s *Sweeper) wakeDecided(ctx context.Context, r run.Run, gen int) (Repair, bool, error) {
	rp := Repair{RunID: r.ID}
	if s.Wake == nil || r.Status != run.StatusAwaitingApproval {
		return rp, false, nil
	}
	aps, err := s.Store.ListApprovals(ctx, r.ID)
	if err != nil {
		return rp, false, err
	}
	var last run.Approval
	for _, a := range aps {
		if last.ID == "" || !a.CreatedAt.Before(last.CreatedAt) {
			last = a
		}
	}
	if last.TaskToken == "" || last.Status == run.ApprovalPending {
		return rp, false, nil
	}
	rp.Found, rp.Action, rp.Execution = FoundDecisionNotDelivered, ActionWoken, stepfunctions.ExecutionName(r.ID, gen)
	rp.Reason = fmt.Sprintf("approval %s is %s but the run still waits on it", last.ID, last.Status)
	if err := s.Wake.Resume(ctx, last); err != nil {
		return rp, true, err
	}
	return rp, true, s.record(ctx, r, rp)
}

// latest returns the newest generation of the run's execution and its
// status; -1 when the run has none.
func (s *Sweeper) latest(ctx context.Context, runID string) (int, string, error) {
	gen, status := -1, ""
	for g := 0; g < maxGenerations; g++ {
		st, err := s.Executions.ExecutionStatus(ctx, stepfunctions.ExecutionName(runID, g))
		if errors.Is(err, ErrNoExecution) {
			return gen, status, nil
		}
		if err != nil {
			return gen, status, fmt.Errorf("describe execution %s: %w", stepfunctions.ExecutionName(runID, g), err)
		}
		gen, status = g, st
		if st == StatusRunning {
			return gen, status, nil
		}
	}
	return gen, status, fmt.Errorf("run %s has over %d executions", runID, maxGenerations)
}

// resumes counts the sweeper's earlier resumes of the run in its log.
func (s *Sweeper) resumes(ctx context.Context, runID string) (int, error) {
	n := 0
	var after int64
	for {
		evs, err := s.Store.ReadEvents(ctx, runID, after, store.MaxEventsPerPage)
		if err != nil {
			return 0, err
		}
		for _, e := range evs {
			if e.Type != run.EventRunSwept {
				continue
			}
			var d Repair
			if json.Unmarshal(e.Data, &d) == nil && d.Action == ActionResumed {
				n++
			}
		}
		if len(evs) < store.MaxEventsPerPage {
			return n, nil
		}
		after = evs[len(evs)-1].Seq
	}
}

func (s *Sweeper) record(ctx context.Context, r run.Run, rp Repair) error {
	data, _ := json.Marshal(map[string]any{"found": rp.Found, "action": rp.Action, "execution": rp.Execution,
		"new_execution": rp.NewExecution, "reason": rp.Reason, "run_status": r.Status})
	_, err := s.Store.AppendEvents(ctx, r.ID, []run.Event{{Type: run.EventRunSwept, Time: s.now(), Data: data}})
	if err != nil {
		return fmt.Errorf("record run_swept: %w", err)
	}
	return nil
}

func (s *Sweeper) maxResumes() int {
	if s.MaxResumes > 0 {
		return s.MaxResumes
	}
	return DefaultMaxResumes
}

func (s *Sweeper) now() time.Time {
	if s.Clock != nil {
		return s.Clock()
	}
	return time.Now()
}

func (s *Sweeper) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.New(slog.DiscardHandler)
}
