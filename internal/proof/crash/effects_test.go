package crash

import (
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
)

// observed is good() as a program's run: its effect observed by count.
func observed() Evidence {
	e := good()
	e.Pubs = nil
	e.Ops[0].Tool, e.Ops[0].PlanItemID, e.Ops[0].Attempts = "update_ticket", "item_1", 1
	e.Items = []run.PlanItem{{ID: "item_1", Tool: "update_ticket", Mode: run.ModeMutating}}
	e.Observed = map[string]Observation{"op_1": {By: "count", Count: 1}}
	return e
}

func TestCheckEffects(t *testing.T) {
	statuses := allowed(run.StatusCompleted, run.StatusNeedsHuman)
	cases := []struct {
		name   string
		mutate func(*Evidence)
		expect Expect
		want   string // a violation containing this; "" for none
		dups   int
		// unverified: an unverified operation containing this; "" for none
		unverified string
		advice     string // advice containing this
	}{
		{name: "good", mutate: func(*Evidence) {}},
		{name: "applied twice", mutate: func(e *Evidence) { e.Observed["op_1"] = Observation{By: "count", Count: 2} },
			want: "DUPLICATE: update_ticket operation op_1 applied 2 times", dups: 1, advice: "declare the promise it really keeps"},
		{name: "succeeded, not at the destination", mutate: func(e *Evidence) { e.Observed["op_1"] = Observation{By: "count"} },
			want: "recorded succeeded but the destination does not hold it"},
		{name: "failed, yet applied", mutate: func(e *Evidence) {
			e.Run.Status = run.StatusCompleted
			e.Ops[0].Status = run.OpFailed
			e.Events[4].Type = run.EventOpFailed
		}, want: "recorded failed but the destination applied it"},
		{name: "a lookup's external id is not Keel's", mutate: func(e *Evidence) {
			e.Observed["op_1"] = Observation{By: "lookup", Count: 1, ExternalID: "pub_9"}
		}, want: "records external id pub_1, the destination says pub_9"},
		{name: "needs_human with nothing at the destination", mutate: func(e *Evidence) {
			e.Run.Status = run.StatusNeedsHuman
			e.LogDone = false
			e.Ops[0].Status = run.OpNeedsHuman
			e.Events[4].Type = run.EventOpNeedsHuman
			e.Events[5].Type = run.EventRunNeedsHuman
			e.Observed["op_1"] = Observation{By: "lookup"}
		}, expect: Expect{Statuses: statuses}},
		{name: "cannot be asked, dispatched once", mutate: func(e *Evidence) { e.Observed["op_1"] = Observation{} }},
		{name: "cannot be asked, dispatched twice", mutate: func(e *Evidence) {
			e.Observed["op_1"] = Observation{}
			e.Ops[0].Attempts = 2
		}, unverified: "UNVERIFIED: update_ticket operation op_1 (succeeded, 2 dispatches): dispatched 2 times, and the effect has no Count hook and no Lookup",
			advice: "add a Lookup"},
		{name: "cannot be asked, handed to a person", mutate: func(e *Evidence) {
			e.Run.Status = run.StatusNeedsHuman
			e.LogDone = false
			e.Ops[0].Status, e.Ops[0].Attempts = run.OpNeedsHuman, 2
			e.Events[4].Type = run.EventOpNeedsHuman
			e.Events[5].Type = run.EventRunNeedsHuman
			e.Observed["op_1"] = Observation{}
		}, expect: Expect{Statuses: statuses}},
		{name: "the destination could not answer", mutate: func(e *Evidence) {
			e.Observed["op_1"] = Observation{By: "count", Error: "connection refused"}
		}, unverified: "its Count hook could not answer: connection refused", advice: "--env K=V"},
		{name: "a Lookup that cannot find what Dispatch created", mutate: func(e *Evidence) {
			e.Observed["op_1"] = Observation{By: "lookup"}
		}, want: "recorded succeeded but the destination does not hold it", advice: "must search by the operation id"},
		{name: "two operations for one plan item", mutate: func(e *Evidence) {
			e.Ops = append(e.Ops, run.Operation{ID: "op_2", Tool: "update_ticket", PlanItemID: "item_1", Status: run.OpSucceeded, ArgsHash: "h1"})
			e.Observed["op_2"] = Observation{By: "count", Count: 1}
			e.Events = append(e.Events[:5:5], api.Event{Seq: 6, Type: run.EventOpIntent, OperationID: "op_2"},
				api.Event{Seq: 7, Type: run.EventOpSucceeded, OperationID: "op_2"}, api.Event{Seq: 8, Type: run.EventRunCompleted})
		}, want: "DUPLICATE: plan item item_1 (update_ticket) has 2 operations"},
		{name: "more operations than the unkilled run", mutate: func(*Evidence) {},
			expect: Expect{OpsPerEffect: map[string]int{"update_ticket": 0}}, want: "update_ticket: 1 operations, the unkilled run had 0"},
		{name: "an approval lost", mutate: func(e *Evidence) {
			e.Approvals = append(e.Approvals, api.Approval{ApprovalID: "apr_2", Tool: "read_customer", Status: run.ApprovalPending})
		}, want: "LOST APPROVAL: approval apr_2 (read_customer) still pending"},
		{name: "granted twice", mutate: func(e *Evidence) {
			e.Events = append(e.Events[:3:3], append([]api.Event{{Type: run.EventApprovalGranted}}, e.Events[3:]...)...)
			for i := range e.Events {
				e.Events[i].Seq = int64(i + 1)
			}
		}, want: "LOST APPROVAL: 2 approval_granted events for 1 approved approvals"},
		{name: "dispatched args nobody approved", mutate: func(e *Evidence) { e.Ops[0].ArgsHash = "h2" },
			want: "dispatched args h2 that no approved approval covers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := observed()
			tc.mutate(&ev)
			v := Check(ev, tc.expect)
			got := strings.Join(v.Violations, "; ")
			switch {
			case tc.want == "" && got != "":
				t.Fatalf("violations: %s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Fatalf("violations %q, want one containing %q", got, tc.want)
			}
			if v.Duplicates != tc.dups {
				t.Errorf("duplicates %d, want %d", v.Duplicates, tc.dups)
			}
			unv := strings.Join(v.Unverified, "; ")
			if (tc.unverified == "") != (unv == "") || !strings.Contains(unv, tc.unverified) {
				t.Errorf("unverified %q, want %q", unv, tc.unverified)
			}
			if adv := strings.Join(v.Advice, "; "); !strings.Contains(adv, tc.advice) || (tc.advice == "" && tc.want == "" && adv != "") {
				t.Errorf("advice %q, want %q", adv, tc.advice)
			}
		})
	}
}

func TestEffectRows(t *testing.T) {
	ev := observed()
	ev.Ops = append(ev.Ops, run.Operation{ID: "op_2", Tool: "update_ticket", Status: run.OpNeedsHuman, Attempts: 2})
	ev.Observed["op_2"] = Observation{By: "count", Count: 1}
	rows := effectRows(ev)
	if len(rows) != 1 {
		t.Fatalf("rows %+v", rows)
	}
	r := rows[0]
	if r.Effect != "update_ticket" || r.Operations != 2 || r.Dispatches != 3 || r.Recorded != "succeeded,needs_human" || r.Destination != 2 || !r.NeedsHuman || r.By != "count" {
		t.Fatalf("row %+v", r)
	}
}

// TestPrintProgramUnverified: a run that broke nothing but could not be
// checked is neither passed nor failed, in the table, the summary and
// ProgramReport.Unverified, and its advice is printed.
func TestPrintProgramUnverified(t *testing.T) {
	row := func(name string, violations, unverified []string) Result {
		return Result{Name: name, Verdict: Verdict{Status: run.StatusCompleted, Violations: violations, Unverified: unverified, Advice: []string{"do " + name}},
			Effects: []EffectRow{{Effect: "post_note", Dispatches: 2, Recorded: "succeeded", Unverified: len(unverified) > 0}}}
	}
	rep := ProgramReport{Baseline: row("unkilled", nil, nil), Rows: []Result{
		row("after_dispatch:1", nil, []string{"UNVERIFIED: post_note operation op_1"}),
		row("after_intent:1", []string{"DUPLICATE: x"}, []string{"UNVERIFIED: post_note operation op_2"}),
	}}
	if got := rep.Unverified(); len(got) != 1 || got[0] != "after_dispatch:1" {
		t.Errorf("Unverified() = %q, want [after_dispatch:1]", got)
	}
	var b strings.Builder
	PrintProgram(&b, rep)
	out := b.String()
	for _, want := range []string{"?(cannot ask)", "UNVERIFIED after_dispatch:1", "FAIL after_intent:1", "what to do:\n    - do after_dispatch:1",
		"1 passed, 1 failed, 1 unverified"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
