package telemetry

import "testing"

func TestTraceIDOfTraceParent(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "4bf92f3577b34da6a3ce929d0e0e4736", true},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", "", false},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e47-00f067aa0ba902b7-01", "", false},
		{"00-zzf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "", false},
		{"", "", false},
	} {
		got, ok := traceIDOf(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("traceIDOf(%q) = %q, %v", tc.in, got, ok)
		}
	}
}
