package crash

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
)

// good is the evidence of a run that kept every invariant.
func good() Evidence {
	evs := []api.Event{
		{Type: run.EventRunCreated},
		{Type: run.EventApprovalRequested},
		{Type: run.EventApprovalGranted},
		{Type: run.EventOpIntent, OperationID: "op_1"},
		{Type: run.EventOpSucceeded, OperationID: "op_1"},
		{Type: run.EventRunCompleted},
	}
	for i := range evs {
		evs[i].Seq = int64(i + 1)
	}
	return Evidence{
		Run:       api.Run{Status: run.StatusCompleted},
		Events:    evs,
		LogDone:   true,
		Approvals: []api.Approval{{ApprovalID: "apr_1", Status: run.ApprovalApproved, ArgsHash: "h1"}},
		Ops:       []run.Operation{{ID: "op_1", Status: run.OpSucceeded, ExternalID: "pub_1", ArgsHash: "h1"}},
		Pubs:      []Publication{{ID: "pub_1", OperationID: "op_1"}},
	}
}

func TestCheck(t *testing.T) {
	needsHuman := func(e *Evidence, pubs int) {
		e.Run.Status = run.StatusNeedsHuman
		e.LogDone = false
		e.Ops[0].Status, e.Ops[0].ExternalID = run.OpNeedsHuman, ""
		e.Events[4].Type = run.EventOpNeedsHuman
		e.Events[5].Type = run.EventRunNeedsHuman
		e.Pubs = e.Pubs[:0]
		for range pubs {
			e.Pubs = append(e.Pubs, Publication{ID: "pub_x", OperationID: "op_1"})
		}
	}
	allowNH := Expect{Approval: true, Statuses: allowed(run.StatusCompleted, run.StatusNeedsHuman)}
	cases := []struct {
		name   string
		mutate func(*Evidence)
		expect Expect
		want   string // a violation containing this; "" for none
		dups   int
	}{
		{name: "a run that kept every invariant", want: ""},
		{name: "second publication", mutate: func(e *Evidence) {
			e.Pubs = append(e.Pubs, Publication{ID: "pub_2", OperationID: "op_1"})
		}, want: "DUPLICATE", dups: 1},
		{name: "succeeded without a publication", mutate: func(e *Evidence) { e.Pubs = nil }, want: "no publication for it"},
		{name: "external id is another publication", mutate: func(e *Evidence) { e.Ops[0].ExternalID = "pub_9" }, want: "records external id"},
		{name: "operation left pending", mutate: func(e *Evidence) { e.Ops[0].Status = run.OpPending }, want: "left pending"},
		{name: "failed but the destination has it", mutate: func(e *Evidence) {
			e.Ops[0].Status = run.OpFailed
			e.Events[4].Type = run.EventOpFailed
		}, want: "is failed but the destination holds"},
		{name: "publication Keel never recorded", mutate: func(e *Evidence) {
			e.Pubs[0].OperationID = "op_ghost"
		}, want: "never recorded"},
		{name: "gap in the event log", mutate: func(e *Evidence) { e.Events[3].Seq = 9 }, want: "event log gap"},
		{name: "log of a completed run not complete", mutate: func(e *Evidence) { e.LogDone = false }, want: "complete"},
		{name: "two intents for one operation", mutate: func(e *Evidence) {
			e.Events = append(e.Events, api.Event{Seq: 7, Type: run.EventOpIntent, OperationID: "op_1"})
		}, want: "2 op_intent"},
		{name: "no outcome event", mutate: func(e *Evidence) { e.Events[4].Type = run.EventCheckpointWritten }, want: "0 outcome events"},
		{name: "outcome before intent", mutate: func(e *Evidence) {
			e.Events[3].Type, e.Events[4].Type = run.EventOpSucceeded, run.EventOpIntent
		}, want: "before its op_intent"},
		{name: "dispatched args are not the approved ones", mutate: func(e *Evidence) { e.Ops[0].ArgsHash = "h2" }, want: "no approved approval covers"},
		{name: "approval recorded twice", mutate: func(e *Evidence) { e.Events[1].Type = run.EventApprovalGranted }, want: "approval recorded 2 times"},
		{name: "status not allowed", mutate: func(e *Evidence) { e.Run.Status = run.StatusFailed }, want: "run ended failed"},
		{name: "needs_human, destination has it", mutate: func(e *Evidence) { needsHuman(e, 1) }, expect: allowNH, want: ""},
		{name: "needs_human, destination has nothing", mutate: func(e *Evidence) { needsHuman(e, 0) }, expect: allowNH, want: ""},
		{name: "needs_human with two publications", mutate: func(e *Evidence) { needsHuman(e, 2) }, expect: allowNH, want: "DUPLICATE", dups: 1},
		{name: "nothing to publish but published", mutate: func(e *Evidence) { e.Run.Status = run.StatusCancelled; e.Events[5].Type = run.EventRunCancelled },
			expect: Expect{Statuses: allowed(run.StatusCancelled), NoEffect: true, Approval: true}, want: "want none"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := good()
			if tc.mutate != nil {
				tc.mutate(&ev)
			}
			x := tc.expect
			if x.Statuses == nil && !x.NoEffect {
				x = Expect{Approval: true}
			}
			v := Check(ev, x)
			if tc.want == "" && len(v.Violations) > 0 {
				t.Fatalf("violations %q, want none", v.Violations)
			}
			if tc.want != "" && !strings.Contains(strings.Join(v.Violations, "\n"), tc.want) {
				t.Fatalf("violations %q, want one with %q", v.Violations, tc.want)
			}
			if v.Duplicates != tc.dups {
				t.Errorf("duplicates %d, want %d", v.Duplicates, tc.dups)
			}
		})
	}
}

// logOf numbers events 1..n.
func logOf(evs ...api.Event) []api.Event {
	for i := range evs {
		evs[i].Seq = int64(i + 1)
	}
	return evs
}

func by(who string) json.RawMessage { return json.RawMessage(`{"by":"` + who + `"}`) }

// The two invariants of issue 34 on the shapes it reports, and on the
// honest runs next to them.
func TestCheckSettledAndNeedsHumanWaits(t *testing.T) {
	intent := api.Event{Type: run.EventOpIntent, OperationID: "op_1"}
	opNH := api.Event{Type: run.EventOpNeedsHuman, OperationID: "op_1"}
	runNH := api.Event{Type: run.EventRunNeedsHuman}
	lease := api.Event{Type: run.EventLeaseAcquired}
	cases := []struct {
		name      string
		status    run.Status
		op        run.OpStatus
		events    []api.Event
		want      string // a violation beginning so; "" for none of the two
		unsettled int
		moved     int
	}{
		{name: "issue 34 item 1: failed by finalize, operation still pending", status: run.StatusFailed, op: run.OpPending,
			events: logOf(api.Event{Type: run.EventRunCreated}, lease, api.Event{Type: run.EventApprovalGranted}, intent,
				api.Event{Type: run.EventRunFailed, Data: json.RawMessage(`{"by":"finalize","error":"RetryableError: lease held by another worker, retry after 5s"}`)}),
			want: ViolationUnsettled + " run failed over operation op_1 (publish_report) pending", unsettled: 1},
		{name: "completed over a pending operation", status: run.StatusCompleted, op: run.OpPending,
			events: logOf(lease, intent, api.Event{Type: run.EventRunCompleted}), want: ViolationUnsettled + " run completed", unsettled: 1},
		{name: "cancelled over a pending operation", status: run.StatusCancelled, op: run.OpPending,
			events: logOf(lease, intent, api.Event{Type: run.EventCancelRequested, Data: by("alice")}, api.Event{Type: run.EventRunCancelled}),
			want:   ViolationUnsettled + " run cancelled", unsettled: 1},
		{name: "issue 34 item 2: completed after run_needs_human, no decision", status: run.StatusCompleted, op: run.OpNeedsHuman,
			events: logOf(lease, intent, opNH, runNH, lease, api.Event{Type: run.EventCheckpointWritten},
				api.Event{Type: run.EventModelCallStarted}, api.Event{Type: run.EventModelCallCompleted}, api.Event{Type: run.EventRunCompleted}),
			want: ViolationNeedsHumanMoved + " seq 5 lease_acquired", unsettled: 1, moved: 1},
		{name: "failed over needs_human with no decision", status: run.StatusFailed, op: run.OpNeedsHuman,
			events: logOf(lease, intent, opNH, api.Event{Type: run.EventRunFailed, Data: by("finalize")}),
			want:   ViolationUnsettled + " run failed over operation op_1 (publish_report) needs_human with no person's decision", unsettled: 1},
		{name: "a runtime cancel is no person's decision", status: run.StatusCancelled, op: run.OpNeedsHuman,
			events: logOf(lease, intent, opNH, runNH, api.Event{Type: run.EventCancelRequested, Data: by("finalize")}, lease, api.Event{Type: run.EventRunCancelled}),
			want:   ViolationNeedsHumanMoved + " seq 6 lease_acquired", unsettled: 1, moved: 1},
		{name: "a decision before the operation's op_needs_human does not cover it", status: run.StatusCancelled, op: run.OpNeedsHuman,
			events: logOf(api.Event{Type: run.EventCancelRequested, Data: by("alice")}, lease, intent, opNH, api.Event{Type: run.EventRunCancelled}),
			want:   ViolationUnsettled, unsettled: 1},
		{name: "needs_human, waiting, a person's input appended", status: run.StatusNeedsHuman, op: run.OpNeedsHuman,
			events: logOf(lease, intent, opNH, runNH, api.Event{Type: run.EventInputReceived}, api.Event{Type: run.EventRunSwept})},
		{name: "needs_human, cancelled by a person, then ended", status: run.StatusCancelled, op: run.OpNeedsHuman,
			events: logOf(lease, intent, opNH, runNH, api.Event{Type: run.EventCancelRequested, Data: by("alice")}, lease, api.Event{Type: run.EventRunCancelled})},
		{name: "needs_human, a person gave up (settled), then failed", status: run.StatusFailed, op: run.OpNeedsHuman,
			events: logOf(lease, intent, opNH, runNH, api.Event{Type: "op_settled", OperationID: "op_1", Data: by("alice")}, lease, api.Event{Type: run.EventRunFailed})},
		{name: "completed, every operation settled", status: run.StatusCompleted, op: run.OpSucceeded,
			events: logOf(lease, intent, api.Event{Type: run.EventOpSucceeded, OperationID: "op_1"}, api.Event{Type: run.EventRunCompleted})},
		{name: "needs_human again after a second lease is still one breach", status: run.StatusNeedsHuman, op: run.OpNeedsHuman,
			events: logOf(lease, intent, opNH, runNH, lease, runNH),
			want:   ViolationNeedsHumanMoved + " seq 5 lease_acquired", moved: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := Evidence{Run: api.Run{Status: tc.status}, Events: tc.events,
				Ops: []run.Operation{{ID: "op_1", Tool: "publish_report", Status: tc.op, Attempts: 1}}}
			var v Verdict
			checkSettled(ev, &v)
			checkNeedsHumanWaits(ev, &v)
			if tc.want == "" && len(v.Violations) > 0 {
				t.Fatalf("violations %q, want none", v.Violations)
			}
			if tc.want != "" && !slices.ContainsFunc(v.Violations, func(s string) bool { return strings.HasPrefix(s, tc.want) }) {
				t.Fatalf("violations %q, want one beginning %q", v.Violations, tc.want)
			}
			if v.EndedUnsettled != tc.unsettled || v.NeedsHumanMoved != tc.moved {
				t.Errorf("ended unsettled %d, needs_human moved %d; want %d, %d", v.EndedUnsettled, v.NeedsHumanMoved, tc.unsettled, tc.moved)
			}
			// Check itself reports them too.
			if got := Check(ev, Expect{Statuses: allowed(tc.status)}); got.EndedUnsettled != tc.unsettled || got.NeedsHumanMoved != tc.moved {
				t.Errorf("Check: ended unsettled %d, needs_human moved %d", got.EndedUnsettled, got.NeedsHumanMoved)
			}
		})
	}
}
