package crash

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

func yesNo(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

// summary is a row's progress line. A program's run names its effects
// (how often the destination applied each, and how that was known); the
// research suite's names its publications.
func summary(r Result) string {
	switch {
	case !r.Pass():
		return "FAIL  " + r.Violations[0]
	case !r.Verified():
		return "UNVERIFIED  " + r.Unverified[0]
	}
	applied := fmt.Sprintf("pubs=%d", r.Publications)
	if len(r.Effects) > 0 {
		var es []string
		for _, e := range r.Effects {
			es = append(es, fmt.Sprintf("%s=%s", e.Effect, atDestination(e)))
		}
		applied = strings.Join(es, " ")
	}
	return fmt.Sprintf("PASS  kills=%d %s status=%s", r.Kills, applied, r.Status)
}

// atDestination says how often the destination applied an effect's
// operations and how that is known.
func atDestination(e EffectRow) string {
	if e.By == "" {
		return "?(cannot ask)"
	}
	return fmt.Sprintf("%d(%s)", e.Destination, e.By)
}

// PrintMatrix writes one row per scenario, then the violations and notes.
func PrintMatrix(w io.Writer, rows []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tkills\tpublications\tduplicates\tneeds_human\tops = destination\tgapless log\tstatus\tresult")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Kills, r.Publications, r.Duplicates,
			yesNo(r.NeedsHuman, "yes", "no"), yesNo(r.OpsTruth, "ok", "MISMATCH"), yesNo(r.Gapless, "ok", "GAP"),
			r.Status, yesNo(r.Pass(), "PASS", "FAIL"))
	}
	tw.Flush()
	for _, r := range rows {
		if len(r.Notes) > 0 {
			fmt.Fprintf(w, "  %s: %s\n", r.Name, strings.Join(r.Notes, "; "))
		}
	}
	for _, r := range rows {
		for _, v := range r.Violations {
			fmt.Fprintf(w, "  FAIL %s: %s\n", r.Name, v)
		}
		if !r.Pass() && r.Dir != "" {
			fmt.Fprintf(w, "       logs and data kept in %s\n", r.Dir)
		}
	}
}

// Failed counts the rows that broke an invariant.
func Failed(rows []Result) int {
	n := 0
	for _, r := range rows {
		if !r.Pass() {
			n++
		}
	}
	return n
}
