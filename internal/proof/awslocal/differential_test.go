package awslocal

import "testing"

func TestComparable(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Trace
		want string
	}{
		{"continue loops dropped", Trace{States: []string{"Init", "Step=continue", "Count", "Route", "Step=done", "Count", "Route", "Finalize"}, Close: "ExecutionSucceeded"},
			"Init → Step=done → Count → Route → Finalize | ExecutionSucceeded"},
		{"other decisions kept", Trace{States: []string{"Init", "Step=approval", "Count", "Route", "AwaitApproval"}, Close: ""},
			"Init → Step=approval → Count → Route → AwaitApproval | "},
		{"a continue into rollover is timing too", Trace{States: []string{"Step=continue", "Count", "Route", "Rollover"}}, "Rollover | "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Comparable(tc.in); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestGenerations(t *testing.T) {
	tr := map[string]Trace{
		"r":    {States: []string{"Init", "Step=continue", "Count", "Route", "Rollover", "RolledOver"}, Close: "ExecutionSucceeded"},
		"r-g1": {States: []string{"Init", "Step=approval", "Count", "Route", "AwaitApproval", "Step=done", "Count", "Route", "Finalize", "Outcome", "Done"}, Close: "ExecutionSucceeded"},
	}
	one := Trace{States: []string{"Init", "Step=approval", "Count", "Route", "AwaitApproval", "Step=done", "Count", "Route", "Finalize", "Outcome", "Done"}, Close: "ExecutionSucceeded"}
	if got, want := Comparable(Generations(tr, []string{"r", "r-g1"})), Comparable(one); got != want {
		t.Fatalf("two generations compare as %q, want %q", got, want)
	}
	// The bound reached as a Step asked for approval (seen on Keel's
	// executor under load): the next generation asks again, and the run
	// compares as the one where the bound fell elsewhere.
	pre := map[string]Trace{
		"r":    {States: []string{"Init", "Step=continue", "Count", "Route", "Step=approval", "Count", "Route", "Rollover", "RolledOver"}, Close: "ExecutionSucceeded"},
		"r-g1": tr["r-g1"],
	}
	if got, want := Comparable(Generations(pre, []string{"r", "r-g1"})), Comparable(one); got != want {
		t.Fatalf("a pre-empted decision compares as %q, want %q", got, want)
	}
}
