package harness

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
)

func TestPlanNewAndNewItems(t *testing.T) {
	cases := []struct {
		name      string
		own       []run.PlanItem
		inherited []run.PlanItem // nearest fork first
		wantNext  int64
		recorded  map[string]string // call id → the inherited item's id, for calls with a recorded result
		unrecords []string          // call ids with no recorded result to reuse
	}{
		{"a new run", nil, nil, 0, nil, []string{"c1"}},
		{"orders follow the run's own items", []run.PlanItem{{ID: "item_a", CallID: "c1", Order: 4}, {ID: "item_b", CallID: "c2", Order: 1}}, nil, 5, nil, nil},
		{"a fork reuses the nearest recorded result", nil, []run.PlanItem{
			{ID: "item_near", CallID: "c1", Result: json.RawMessage(`{}`)}, {ID: "item_unrun", CallID: "c2"},
			{ID: "item_far", CallID: "c1", Result: json.RawMessage(`{}`)}, {ID: "item_far2", CallID: "c3", Result: json.RawMessage(`{}`)},
		}, 0, map[string]string{"c1": "item_near", "c3": "item_far2"}, []string{"c2", "c4"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlan(tc.own, tc.inherited)
			if !p.loaded() {
				t.Fatal("not loaded")
			}
			for call, id := range tc.recorded {
				if it, ok := p.recorded(call); !ok || it.ID != id {
					t.Errorf("recorded(%s) = %s %v, want %s", call, it.ID, ok, id)
				}
			}
			for _, call := range tc.unrecords {
				if it, ok := p.recorded(call); ok {
					t.Errorf("recorded(%s) = %s, want none", call, it.ID)
				}
			}
			a := p.newItem("run_1", model.ToolCall{ID: "n1", Name: "echo"})
			b := p.newItem("run_1", model.ToolCall{ID: "n2", Name: "echo"})
			if a.Order != tc.wantNext || b.Order != tc.wantNext+1 || a.ID == b.ID || a.Status != run.PlanPending || a.RunID != "run_1" {
				t.Fatalf("new items %+v %+v, want orders %d, %d", a, b, tc.wantNext, tc.wantNext+1)
			}
			if _, ok := p.get("n1"); ok {
				t.Fatal("a new item is the call's item before it is put")
			}
			p.put(a)
			if got, ok := p.byID(a.ID); !ok || got.CallID != "n1" {
				t.Fatalf("byID after put: %+v %v", got, ok)
			}
		})
	}
}

func TestPlanLiveAndWaiting(t *testing.T) {
	p := newPlan([]run.PlanItem{
		{ID: "i1", CallID: "done", Status: run.PlanCompleted},
		{ID: "i2", CallID: "failed", Status: run.PlanFailed},
		{ID: "i3", CallID: "open_done", Status: run.PlanCompleted},
		{ID: "i4", CallID: "running", Status: run.PlanRunning},
		{ID: "i5", CallID: "person", Status: run.PlanNeedsHuman},
		{ID: "i6", CallID: "asked", Status: run.PlanAwaitingApproval},
		{ID: "i7", CallID: "skipped", Status: run.PlanSkipped},
		{ID: "i8", CallID: "denied", Status: run.PlanDenied},
	}, nil)
	cases := []struct {
		name string
		open []model.ToolCall
		want []string
	}{
		{"no open calls", nil, []string{"asked", "person", "running"}},
		{"an open call keeps its item, finished or not", []model.ToolCall{{ID: "open_done"}}, []string{"asked", "open_done", "person", "running"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for call := range p.live(tc.open) {
				got = append(got, call)
			}
			sort.Strings(got)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("live %v, want %v", got, tc.want)
			}
		})
	}
	if w := p.waiting(); len(w) != 1 || w[0].ID != "i5" {
		t.Fatalf("waiting %+v", w)
	}
}

func TestPlanDerivedIDs(t *testing.T) {
	cases := []struct {
		name         string
		it           run.PlanItem
		op, apPrefix string
	}{
		{"an item's operation and approval", run.PlanItem{ID: "item_abc", ArgsHash: "sha256:0123456789abcdef0123"}, "op_abc", "apr_abc_"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := opID(tc.it); got != tc.op {
				t.Errorf("opID %s, want %s", got, tc.op)
			}
			ap := approvalID(tc.it)
			if !strings.HasPrefix(ap, tc.apPrefix) || ap != approvalID(tc.it) {
				t.Errorf("approvalID %s, want prefix %s and the same every time", ap, tc.apPrefix)
			}
			changed := tc.it
			changed.ArgsHash = "sha256:ffff"
			if approvalID(changed) == ap {
				t.Errorf("changed args keep approval %s", ap)
			}
		})
	}
}
