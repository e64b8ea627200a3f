package run

import "testing"

func TestTraceParent(t *testing.T) {
	a, b := NewTraceParent(), NewTraceParent()
	if a == b {
		t.Fatalf("two trace parents are equal: %s", a)
	}
	for _, tc := range []struct {
		name, tp string
		ok       bool
	}{
		{"new", a, true},
		{"empty", "", true},
		{"w3c example", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true},
		{"zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", false},
		{"zero span id", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false},
		{"version ff", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"upper case", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false},
		{"short", "00-4bf92f35-00f067aa0ba902b7-01", false},
		{"not hex", "00-4bf92f3577b34da6a3ce929d0e0e473z-00f067aa0ba902b7-01", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := ValidTraceParent(tc.tp); (err == nil) != tc.ok {
				t.Fatalf("ValidTraceParent(%q) = %v, want ok=%v", tc.tp, err, tc.ok)
			}
		})
	}
}
