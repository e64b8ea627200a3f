package repocheck

import (
	"reflect"
	"testing"
)

// The order TestHarnessShape counts back arrows against: sinks last,
// sources first, and the fewest arrows back that the greedy heuristic
// finds, the same every run.
func TestElsOrder(t *testing.T) {
	cases := []struct {
		name  string
		nodes []string
		arcs  map[string][]string
		order []string
		back  []string
	}{
		{"a chain reads top-down", []string{"a", "b", "c"}, map[string][]string{"a": {"b"}, "b": {"c"}}, []string{"a", "b", "c"}, nil},
		{"a cycle costs one arrow", []string{"a", "b", "c"}, map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"a"}}, []string{"a", "b", "c"}, []string{"c → a"}},
		{"the file used most goes last", []string{"x", "y", "z"}, map[string][]string{"x": {"z"}, "y": {"z", "x"}, "z": {"y"}}, []string{"y", "x", "z"}, []string{"z → y"}},
		{"files without arrows: the same order every run", []string{"a", "b"}, nil, []string{"b", "a"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			arcs := map[string]map[string]bool{}
			for from, tos := range tc.arcs {
				arcs[from] = map[string]bool{}
				for _, to := range tos {
					arcs[from][to] = true
				}
			}
			order := elsOrder(tc.nodes, arcs)
			if !reflect.DeepEqual(order, tc.order) {
				t.Fatalf("order %v, want %v", order, tc.order)
			}
			if back := backArcs(order, arcs); !reflect.DeepEqual(back, tc.back) {
				t.Fatalf("back arrows %v, want %v", back, tc.back)
			}
		})
	}
}
