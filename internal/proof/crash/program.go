package crash

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/keelrun/keel/internal/faults"
	"github.com/keelrun/keel/internal/kernel/run"
)

// ProgramOptions select the rows of ProgramMatrix.
type ProgramOptions struct {
	// AllHits plays every hit of every point the unkilled run reached;
	// otherwise each point's first hit only.
	AllHits bool
	// Soak adds that many runs killed at random moments (one to three
	// incarnations each, killed at a delay drawn from the unkilled run's
	// duration plus 50ms; a kill after the run ended kills nothing).
	Soak int
	// Seed makes the soak repeatable.
	Seed uint64
}

// ProgramReport is what ProgramMatrix found.
type ProgramReport struct {
	Agent string `json:"agent"`
	// Hits is how often the unkilled run reached each fault point.
	Hits map[string]int `json:"hits"`
	// Baseline is the unkilled run; Rows are the killed ones, in order.
	Baseline Result        `json:"baseline"`
	Rows     []Result      `json:"rows"`
	Kills    int           `json:"kills"`
	Wall     time.Duration `json:"wall_ns"`
}

// Failed counts the failed runs, the unkilled one included.
func (r ProgramReport) Failed() int {
	n := Failed(r.Rows)
	if !r.Baseline.Pass() {
		n++
	}
	return n
}

// Unverified names the runs, the unkilled one included, that broke no
// invariant but hold an operation whose outcome at its destination could
// not be checked. They are not passes: crashtest fails on them unless told
// to accept them.
func (r ProgramReport) Unverified() []string {
	var out []string
	for _, x := range append([]Result{r.Baseline}, r.Rows...) {
		if x.Pass() && !x.Verified() {
			out = append(out, x.Name)
		}
	}
	return out
}

// ProgramMatrix runs cfg.Agent of the program cfg.Keel through the fault
// matrix. First one run without kills, every fault point counted
// (KEEL_FAULTPOINT=*): it says how often each point is hit and how many
// operations each effect performs. Then one run per point and hit
// (point:1 only unless AllHits), each killed there once and restarted
// until it ends, then the soak's runs. Every run is checked with Check
// against cfg.Counter's observations of the destination.
func ProgramMatrix(ctx context.Context, cfg Config, opt ProgramOptions) ProgramReport {
	start := time.Now()
	rep := ProgramReport{Agent: cfg.agent()}
	statuses := allowed(run.StatusCompleted, run.StatusNeedsHuman)
	base := Play(ctx, cfg, &Scenario{Name: "unkilled (counts hits)",
		Incarnations: []Incarnation{{Fault: faults.CountAll}},
		Expect:       Expect{Statuses: statuses, Unkilled: true}})
	rep.Baseline, rep.Hits = base, base.Hits
	if rep.Hits == nil {
		rep.Hits = map[string]int{}
	}
	if !base.Pass() {
		rep.Wall = time.Since(start)
		return rep
	}
	perEffect := map[string]int{}
	for _, e := range base.Effects {
		perEffect[e.Effect] = e.Operations
	}

	scs := faultScenarios(rep.Hits, opt.AllHits, statuses, perEffect)
	// Kills land from the program serving to a little after the run's
	// own duration: before, during and after its approvals and effects
	// (the driver creates the run at its first tick, 25ms).
	window := base.RunTime + 50*time.Millisecond
	for i := range opt.Soak {
		rng := rand.New(rand.NewPCG(opt.Seed, uint64(i)))
		var incs []Incarnation
		var desc []string
		for range 1 + rng.IntN(3) {
			in := Incarnation{KillAfter: time.Duration(rng.Int64N(int64(window)))}
			incs = append(incs, in)
			desc = append(desc, in.String())
		}
		scs = append(scs, &Scenario{Name: fmt.Sprintf("soak-%d %s", i, strings.Join(desc, " ")),
			Incarnations: incs, Expect: Expect{Statuses: statuses, OpsPerEffect: perEffect}})
	}

	rows := make([]Result, len(scs))
	sem := make(chan struct{}, cfg.Parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, sc := range scs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			r := Play(ctx, cfg, sc)
			<-sem
			if r.Kills == 0 && len(sc.Incarnations) > 0 && sc.Incarnations[0].Fault != "" {
				r.Name += " (not reached)"
			}
			rows[i] = r
			if cfg.Progress != nil {
				mu.Lock()
				fmt.Fprintf(cfg.Progress, "  %-36s %s\n", r.Name, summary(r))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	rep.Rows = rows
	for _, r := range rows {
		rep.Kills += r.Kills
	}
	rep.Wall = time.Since(start)
	return rep
}

// explain picks the events that tell a run's effects' story.
func explain(ev Evidence) []string {
	var out []string
	for _, e := range ev.Events {
		t := string(e.Type)
		if !(strings.HasPrefix(t, "op_") || strings.HasPrefix(t, "approval_") || strings.HasPrefix(t, "lease_") ||
			e.Type == run.EventToolStarted || e.Type == run.EventToolCompleted || e.Type == run.EventToolFailed) {
			continue
		}
		line := fmt.Sprintf("%4d %s %-16s", e.Seq, e.Time.Format("15:04:05.000"), t)
		if e.OperationID != "" {
			line += " op=" + e.OperationID
		}
		if len(e.Data) > 0 && len(e.Data) < 300 {
			line += " " + string(e.Data)
		}
		out = append(out, line)
	}
	return out
}

// PrintProgram writes one row per effect of each played run, then the
// failures with the events that explain them.
func PrintProgram(w io.Writer, rep ProgramReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "fault\teffect\tkills\tdispatches\trecorded\tat destination\tneeds_human\tstatus\tresult")
	all := append([]Result{rep.Baseline}, rep.Rows...)
	for _, r := range all {
		effects := r.Effects
		if len(effects) == 0 {
			effects = []EffectRow{{Effect: "-", Recorded: "-"}}
		}
		for _, e := range effects {
			result := r.Outcome()
			if result == "UNVERIFIED" && !e.Unverified {
				result = "PASS" // another effect of the run is the unverified one
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Name, e.Effect, r.Kills, e.Dispatches, e.Recorded, atDestination(e),
				yesNo(e.NeedsHuman, "yes", "no"), r.Status, result)
		}
	}
	tw.Flush()
	var notReached []string
	for _, p := range Points {
		if rep.Hits[p] == 0 {
			notReached = append(notReached, p)
		}
	}
	fmt.Fprintf(w, "hits in the unkilled run:")
	for _, p := range slices.Concat(Points, WorkspacePoints) {
		if n := rep.Hits[p]; n > 0 {
			fmt.Fprintf(w, " %s=%d", p, n)
		}
	}
	fmt.Fprintln(w)
	if len(notReached) > 0 {
		fmt.Fprintf(w, "not reached by this agent's run (no row): %s\n", strings.Join(notReached, ", "))
	}
	seen := map[string]bool{}
	for _, r := range all {
		for _, n := range r.Notes {
			if !seen[n] {
				seen[n] = true
				fmt.Fprintf(w, "  note: %s\n", n)
			}
		}
	}
	for _, r := range all {
		if !r.Verified() {
			printProblem(w, r)
		}
	}
	unverified := len(rep.Unverified())
	fmt.Fprintf(w, "\n%d runs, %d rows, %d kills: %d passed, %d failed, %d unverified, %s\n", len(all), rows(all), rep.Kills,
		len(all)-rep.Failed()-unverified, rep.Failed(), unverified, rep.Wall.Round(time.Second))
}

// printProblem writes a failed or unverified run: what broke or could not
// be checked, what to do about it, and the events that tell the story.
func printProblem(w io.Writer, r Result) {
	fmt.Fprintf(w, "\n%s %s (run %s)\n", r.Outcome(), r.Name, r.RunID)
	for _, v := range r.Violations {
		fmt.Fprintf(w, "  %s\n", v)
	}
	for _, u := range r.Unverified {
		fmt.Fprintf(w, "  %s\n", u)
	}
	advice := r.Advice
	if !r.Pass() && len(advice) == 0 {
		advice = []string{adviceKeel}
	}
	fmt.Fprintln(w, "  what to do:")
	for _, a := range advice {
		fmt.Fprintf(w, "    - %s\n", a)
	}
	if len(r.Explain) > 0 {
		fmt.Fprintln(w, "  events:")
		for _, l := range r.Explain {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
	if r.Dir != "" {
		fmt.Fprintf(w, "  logs and data kept in %s\n", r.Dir)
	}
}

func rows(rs []Result) int {
	n := 0
	for _, r := range rs {
		n += max(len(r.Effects), 1)
	}
	return n
}

// faultScenarios are the program matrix's rows of fault points: each
// point's first hit, or with allHits every hit the unkilled run made
// (hits).
func faultScenarios(hits map[string]int, allHits bool, statuses []run.Status, perEffect map[string]int) []*Scenario {
	var scs []*Scenario
	for _, p := range slices.Concat(Points, WorkspacePoints) {
		last := hits[p] // 0 for a point this agent never reaches
		if !allHits {
			last = min(last, 1)
		}
		for nth := 1; nth <= last; nth++ {
			sc := FaultScenario(p, nth, "")
			sc.Expect = Expect{Statuses: statuses, Kills: 1, OpsPerEffect: perEffect}
			if nth > 1 {
				// How often a point is hit past the first time varies
				// with timing (tool results that land together share a
				// commit): a later hit this run did not reach is not a
				// failure, as in the stock matrix; the row still keeps
				// every invariant, and says it was not reached.
				sc.Expect.Kills = 0
			}
			scs = append(scs, sc)
		}
	}
	return scs
}
