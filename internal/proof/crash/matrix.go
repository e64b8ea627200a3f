package crash

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"sync"
	"time"

	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/model/scripted"
	"github.com/keelrun/keel/internal/kernel/run"
)

// Points are Keel's fault points, in the order a run meets them.
var Points = []string{
	harness.FaultLeaseHandover,
	harness.FaultInModelStream,
	harness.FaultInStepCommit,
	harness.FaultAwaitApproval,
	harness.FaultBeforeWake,
	harness.FaultAfterDecision,
	harness.FaultBeforeIntent,
	harness.FaultAfterIntent,
	harness.FaultAfterDispatch,
	harness.FaultAfterResult,
}

// WorkspacePoints are the fault points only a run with a workspace meets
// (commands, snapshots). Matrix's research agent has none; ProgramMatrix
// plays them for a program whose baseline run reaches them.
var WorkspacePoints = []string{
	harness.FaultInCommand,
	harness.FaultInWorkspaceSnapshot,
}

// maxNth bounds the enumeration of one point's hits in one run.
const maxNth = 40

// FaultScenario kills the first keel dev at the nth hit of point, then
// lets a fresh one finish the run. With the "lookup" contract the
// destination ignores Idempotency-Key, so only Keel's reconciliation stands
// between a crash and a second publication.
func FaultScenario(point string, nth int, contract string) *Scenario {
	name := fmt.Sprintf("%s:%d", point, nth)
	if contract != "lookup" && contract != "" {
		name += " [" + contract + "]"
	}
	st := allowed(run.StatusCompleted)
	if contract == "none" {
		// Killed with an operation pending at a destination that can
		// neither be asked nor safely retried: a person decides.
		st = allowed(run.StatusCompleted, run.StatusNeedsHuman)
	}
	return &Scenario{Name: name, Contract: contract,
		Incarnations: []Incarnation{{Fault: fmt.Sprintf("%s:%d", point, nth)}},
		Expect:       Expect{Statuses: st, Approval: true, Kills: 1}}
}

// MatrixOptions select the rows.
type MatrixOptions struct {
	// Only, when set, keeps the rows whose name matches.
	Only *regexp.Regexp
	// Task includes the rows that kill the long-running task child: the
	// local executor notices a lost task only by its missing heartbeat,
	// so each takes over two minutes.
	Task bool
	// MaxNth > 0 plays at most that many hits of each point (1: every
	// point once); 0 enumerates them all.
	MaxNth int
}

// Matrix plays every hit of every fault point (point:1, point:2, … until
// the run completes without reaching the next hit), the contract variants,
// and the scenarios beyond fault points: two writers, a stale writer,
// cancellation in flight, a provider that times out and cannot confirm, a
// model stream cut inside a tool call's arguments, and faults inside the
// long-running task. Rows come back in a stable order.
func Matrix(ctx context.Context, cfg Config, opt MatrixOptions) []Result {
	keep := func(name string) bool { return opt.Only == nil || opt.Only.MatchString(name) }
	sem := make(chan struct{}, cfg.Parallel)
	var mu sync.Mutex
	var rows []orderedResult
	play := func(order int, sc *Scenario) Result {
		if !sc.idle {
			sem <- struct{}{}
		}
		r := Play(ctx, cfg, sc)
		if !sc.idle {
			<-sem
		}
		if cfg.Progress != nil {
			mu.Lock()
			fmt.Fprintf(cfg.Progress, "  %-46s %s\n", r.Name, summary(r))
			mu.Unlock()
		}
		return r
	}
	add := func(order int, r Result) {
		mu.Lock()
		rows = append(rows, orderedResult{order, r})
		mu.Unlock()
	}
	var wg sync.WaitGroup
	order := 0
	next := func() int { order += 1000; return order }

	// The long task rows first: they wait on a heartbeat timeout.
	var special []*Scenario
	if opt.Task {
		special = append(special, TaskScenario(harness.FaultAwaitApproval), TaskScenario(harness.FaultAfterDispatch))
	}
	special = append(special, TwoWritersBusy(), StaleWriterFenced(), CancelInFlight(), ProviderTimeout())
	if sc, err := StreamCut(cfg.Script); err != nil {
		add(next(), Result{Name: StreamCutName, Verdict: Verdict{Violations: []string{err.Error()}}})
	} else {
		special = append(special, sc)
	}
	for _, p := range Points {
		o := next()
		if !keep(p + ":1") {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := maxNth
			if opt.MaxNth > 0 {
				last = min(opt.MaxNth, maxNth)
			}
			for nth := 1; nth <= last; nth++ {
				sc := FaultScenario(p, nth, "lookup")
				if nth > 1 {
					// Past the first hit, "not reached" ends the
					// enumeration instead of failing the row.
					sc.Expect.Kills = 0
				}
				r := play(o+nth, sc)
				if r.Kills > 0 {
					add(o+nth, r)
					continue
				}
				// Not reached: the run went through without an nth hit.
				// That run still had to keep every invariant; a point
				// never reached at all is a failure of the suite.
				if !r.Pass() {
					r.Name += " (not reached)"
					add(o+nth, r)
				}
				return
			}
		}()
	}
	for _, p := range []string{harness.FaultAfterIntent, harness.FaultAfterDispatch} {
		for _, c := range []string{"full", "idempotent", "none"} {
			sc := FaultScenario(p, 1, c)
			if c == "none" {
				sc.Expect.Statuses = allowed(run.StatusNeedsHuman)
			}
			o := next()
			if keep(sc.Name) {
				wg.Add(1)
				go func() { defer wg.Done(); add(o, play(o, sc)) }()
			}
		}
	}
	for _, sc := range special {
		o := next()
		if keep(sc.Name) {
			wg.Add(1)
			go func() { defer wg.Done(); add(o, play(o, sc)) }()
		}
	}
	wg.Wait()
	sort.Slice(rows, func(i, j int) bool { return rows[i].order < rows[j].order })
	out := make([]Result, len(rows))
	for i, r := range rows {
		out[i] = r.Result
	}
	return out
}

type orderedResult struct {
	order int
	Result
}

// TaskScenario spills analyze_documents and publish_report to the
// long-running task child and kills that child (KEEL_TASK_FAULTPOINT) at
// fault; keel dev itself lives on, notices the lost task by its missing
// heartbeat and steps the run again, reconciling first. Every task child
// is armed, so fault must be a point the run passes once in all its
// tasks (await_approval, after_dispatch): one hit on every task start
// (lease_handover:1) would kill each new task in turn.
func TaskScenario(fault string) *Scenario {
	return &Scenario{Name: "task " + fault + " (child task)", Contract: "lookup",
		Env:    []string{"KEEL_SPILL_TOOLS=analyze_documents,publish_report", "KEEL_TASK_FAULTPOINT=" + fault},
		Expect: Expect{Approval: true, Kills: 1}, idle: true}
}

// CancelInFlight cancels the run while analyze_documents is held in flight
// (KEEL_TOOL_DELAY): the call in flight finishes and is recorded, nothing
// new starts after the cancel, nothing is published.
//
// The harness commits a call's tool_started together with its result, so
// from outside the suite knows the call is in flight only indirectly: the
// previous call's result is committed and the next call starts right
// after it. The suite cancels inflightLead later, inside the held
// window, and the check then proves from the events' own times (stamped
// when they happened, not when committed) that the cancel landed while the
// call was in flight; a cancel that missed the window fails the row
// instead of passing it vacuously.
func CancelInFlight() *Scenario {
	const inflightLead = 400 * time.Millisecond
	return &Scenario{Name: CancelName, Contract: "lookup",
		Env:    []string{"KEEL_TOOL_DELAY=analyze_documents=3s"},
		Expect: Expect{Statuses: allowed(run.StatusCancelled), NoEffect: true},
		onTick: func(ctx context.Context, n *node, st *driveState) error {
			if st.cancelled {
				return nil
			}
			if !st.armedAt.IsZero() {
				if time.Since(st.armedAt) < inflightLead {
					return nil
				}
				if _, err := n.c.Cancel(ctx, st.runID); err != nil {
					return classify("cancel", err)
				}
				st.cancelled = true
				return nil
			}
			page, err := n.c.Events(ctx, st.runID, st.cursor, 500)
			if err != nil {
				return classify("events", err)
			}
			for _, e := range page.Events {
				st.cursor = e.Seq
				if e.Type == run.EventToolCompleted && eventData(e.Data)["tool"] == "collect_documents" {
					st.armedAt = time.Now()
				}
			}
			return nil
		},
		check: func(ev Evidence, res *Result) {
			var cancelAt, startAt, doneAt time.Time
			var item string
			for _, e := range ev.Events {
				switch {
				case e.Type == run.EventCancelRequested && cancelAt.IsZero():
					cancelAt = e.Time
				case e.Type == run.EventToolStarted && eventData(e.Data)["tool"] == "analyze_documents":
					startAt, item = e.Time, e.PlanItemID
				case (e.Type == run.EventToolCompleted || e.Type == run.EventToolFailed) && e.PlanItemID == item && item != "":
					doneAt = e.Time
				case (e.Type == run.EventToolCompleted || e.Type == run.EventToolFailed) && item == "" &&
					eventData(e.Data)["tool"] == "analyze_documents":
					// Its tool_started was left out (it would have landed
					// in this commit): the result carries the duration.
					startAt, doneAt, item = startOf(e), e.Time, e.PlanItemID
				}
			}
			if cancelAt.IsZero() || startAt.IsZero() || !startAt.Before(cancelAt) || !doneAt.After(cancelAt) {
				res.fail("the cancel (%s) did not land while analyze_documents was in flight (started %s, recorded %s)",
					stamp(cancelAt), stamp(startAt), stamp(doneAt))
				return
			}
			for _, e := range ev.Events {
				// A completion that carries duration_us stands for its
				// started event, which was left out.
				_, whole := eventData(e.Data)["duration_us"]
				if startOf(e).After(cancelAt) && (e.Type == run.EventToolStarted || e.Type == run.EventModelCallStarted || e.Type == run.EventOpIntent ||
					whole && (e.Type == run.EventToolCompleted || e.Type == run.EventToolFailed || e.Type == run.EventModelCallCompleted)) {
					res.fail("%s (seq %d) started after the cancel was recorded", e.Type, e.Seq)
				}
			}
			if len(ev.Ops) != 0 {
				res.fail("%d operations recorded by a cancelled run", len(ev.Ops))
			}
			res.Notes = append(res.Notes, fmt.Sprintf("analyze_documents in flight from %s, cancel at %s, its result recorded at %s; nothing started after",
				stamp(startAt), stamp(cancelAt), stamp(doneAt)))
		}}
}

// CancelName names the cancellation row.
const CancelName = "cancel during an in-flight tool call"

func stamp(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Format("15:04:05.000")
}

// ProviderTimeout publishes to a destination that records the request,
// never answers, offers no lookup and no idempotency: the request times
// out, Keel cannot know, and the run must end needs_human with exactly one
// request at the destination — never a second one.
func ProviderTimeout() *Scenario {
	return &Scenario{Name: ProviderTimeoutName, Contract: "none", Hang: true, PublishTimeout: time.Second,
		Expect: Expect{Statuses: allowed(run.StatusNeedsHuman), Approval: true},
		check: func(ev Evidence, res *Result) {
			if len(ev.Pubs) != 1 {
				res.fail("the destination received %d requests, want exactly 1", len(ev.Pubs))
			}
			if len(ev.Ops) != 1 || ev.Ops[0].Status != run.OpNeedsHuman {
				res.fail("want one operation in needs_human, have %+v", opStatuses(ev.Ops))
			}
		}}
}

// StreamCut cuts the model's stream inside the publish call's arguments
// once: the fragment must never be dispatched; the whole call is retried
// (by the transport, or by the state machine retrying the step).
func StreamCut(script []byte) (*Scenario, error) {
	var s scripted.Script
	if err := json.Unmarshal(script, &s); err != nil {
		return nil, fmt.Errorf("the research script: %w", err)
	}
	if len(s.Turns) == 0 {
		return nil, fmt.Errorf("the research script has no turns")
	}
	last := len(s.Turns) - 1 // the publish turn
	s.Turns[last].Faults = append(s.Turns[last].Faults, scripted.Fault{Kind: "cut", Attempts: 1})
	b, _ := json.Marshal(s)
	return &Scenario{Name: StreamCutName, Contract: "lookup", Script: b,
		Expect: Expect{Approval: true},
		check: func(ev Evidence, res *Result) {
			// With the transport the cut attempt is recorded
			// (model_call_failed, retried) and the call retried whole below
			// the loop; without it the step fails and the state machine
			// retries the step. Either way the log must show the cut.
			failed, byTransport := 0, 0
			for _, e := range ev.Events {
				if e.Type == run.EventModelCallFailed {
					failed++
					if eventData(e.Data)["retried"] == true {
						byTransport++
					}
				}
			}
			if failed == 0 {
				res.fail("no trace of the cut stream: no model_call_failed event")
			}
			for _, it := range ev.Items {
				var probe map[string]any
				if json.Unmarshal(it.Args, &probe) != nil || probe["invalid_json"] != nil {
					res.fail("plan item %s (%s) holds a partial call: %s", it.ID, it.Tool, it.Args)
				}
			}
			publishes := 0
			for _, e := range ev.Events {
				if e.Type == run.EventToolStarted && eventData(e.Data)["tool"] == "publish_report" {
					publishes++
				}
			}
			if publishes != 1 {
				res.fail("publish_report started %d times, want 1", publishes)
			}
			how := "the state machine retried the step"
			if byTransport == failed {
				how = "the transport retried the call whole"
			}
			res.Notes = append(res.Notes, fmt.Sprintf("%d cut stream(s), %s; publish_report dispatched once with the approved args", failed, how))
		}}, nil
}

// StreamCutName names the stream-cut row.
const StreamCutName = "model stream cut inside tool args"

func opStatuses(ops []run.Operation) []string {
	var s []string
	for _, o := range ops {
		s = append(s, o.ID+"="+string(o.Status))
	}
	return s
}

// ProviderTimeoutName names the uncertain-provider row.
const ProviderTimeoutName = "provider times out, cannot confirm"
