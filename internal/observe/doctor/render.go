package doctor

import (
	"fmt"
	"strings"
)

// Render is the ten answers as text: each with the facts it rests on and
// its gaps, then a count of the gaps.
func Render(f Facts, as []Answer) string {
	var b strings.Builder
	build := f.Keel.Version
	if f.Keel.Commit != "" {
		build += " " + f.Keel.Commit
	}
	fmt.Fprintf(&b, "Keel %s — executor %s, store %s, artifacts %s\n", build, f.Executor, backend(f.Store), backend(f.Artifacts))
	for _, a := range as {
		fmt.Fprintf(&b, "\n%d. %s\n   %s\n", a.N, a.Question, a.Answer)
		for _, fact := range a.Facts {
			fmt.Fprintf(&b, "   · %s\n", fact)
		}
		for _, g := range a.Gaps {
			fmt.Fprintf(&b, "   GAP %s\n", g)
		}
	}
	if n := Gaps(as); n > 0 {
		fmt.Fprintf(&b, "\n%d gap(s): answers that rest on the prompt, or on nothing.\n", n)
	} else {
		b.WriteString("\nNo gaps.\n")
	}
	return b.String()
}
