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
