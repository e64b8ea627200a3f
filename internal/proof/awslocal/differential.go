package awslocal

import (
	"fmt"
	"strings"
)

// Comparable is a trace without what timing decides: a Step that returned
// "continue" (its time budget ran out, or it waited for a lease) and the
// Count and Route after it are dropped, so two interpreters that differ
// only in how many budget-bound steps a run took compare equal. What
// remains — every other state entered, in order, each decision, and the
// close — must be the same.
func Comparable(t Trace) string {
	var out []string
	for i := 0; i < len(t.States); i++ {
		if t.States[i] == "Step=continue" && i+2 < len(t.States) && t.States[i+1] == "Count" && t.States[i+2] == "Route" {
			i += 2
			continue
		}
		out = append(out, t.States[i])
	}
	return strings.Join(out, " → ") + " | " + t.Close
}

// Diff compares two interpreters' traces of the same executions; "" when
// they agree.
func Diff(a, b map[string]Trace, names []string, an, bn string) string {
	var lines []string
	for _, n := range names {
		ca, cb := Comparable(a[n]), Comparable(b[n])
		if ca != cb {
			lines = append(lines, fmt.Sprintf("%s:\n  %s: %s\n  %s: %s", n, an, ca, bn, cb))
		}
	}
	return strings.Join(lines, "\n")
}

// Generations joins the traces of a run's generations (names in order)
// into one: each Rollover → RolledOver that closes a generation, the
// decision it pre-empted, and the Init that opens the next, are dropped. The last generation's close is
// the run's.
func Generations(traces map[string]Trace, names []string) Trace {
	var out Trace
	for i, n := range names {
		st := traces[n].States
		if i > 0 && len(st) > 0 && st[0] == "Init" {
			st = st[1:]
		}
		if i < len(names)-1 && len(st) >= 2 && st[len(st)-2] == "Rollover" && st[len(st)-1] == "RolledOver" {
			st = st[:len(st)-2]
			// A decision the rollover pre-empted (the loop bound was
			// reached as the Step decided, so Route rolled over instead of
			// following it) is taken again by the next generation's first
			// Step from the same records: where the bound falls is timing,
			// like a "continue", and only the decision that was followed
			// counts.
			if n := len(st); n >= 3 && strings.HasPrefix(st[n-3], "Step=") && st[n-3] != "Step=continue" && st[n-2] == "Count" && st[n-1] == "Route" {
				st = st[:n-3]
			}
		}
		out.States = append(out.States, st...)
		out.Close, out.Cause = traces[n].Close, traces[n].Cause
	}
	return out
}
