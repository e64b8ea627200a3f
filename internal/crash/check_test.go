package crash

import (
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/run"
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
