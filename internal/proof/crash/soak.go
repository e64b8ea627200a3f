package crash

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
)

// SoakOptions shape the randomized soak.
type SoakOptions struct {
	N int
	// Seed makes the soak repeatable (run i draws from (Seed, i)).
	Seed uint64
	// MaxKills bounds the armed incarnations of one run (default 3).
	MaxKills int
	// KillMin and KillMax bound the random delays of the suite's own
	// kills, drawn uniformly in [KillMin, KillMax] after keel dev serves
	// (default 0 to 200ms: a research run takes about 110ms here from keel
	// dev serving to done, so kills land before, during and after the
	// approval, and some after the end).
	KillMin, KillMax time.Duration
	// Contract fixes the destination's contract of every run: lookup,
	// full, idempotent or none. "" or "mixed" draws one per run (40%
	// lookup, 25% full, 15% idempotent, 20% none).
	Contract string
}

// Contracts are the values of SoakOptions.Contract.
var Contracts = []string{"lookup", "full", "idempotent", "none", "mixed"}

// SoakSummary is the soak's table.
type SoakSummary struct {
	Runs         int
	Kills        int
	RandomKills  int // kills at a random moment; the rest hit fault points
	Publications int
	Duplicates   int
	// EndedUnsettled and NeedsHumanMoved count the runs that broke issue
	// 34's invariants: ended over an unsettled operation, went on from
	// needs_human without a person's decision.
	EndedUnsettled  int
	NeedsHumanMoved int
	NeedsHuman      int
	Violations      int // runs that broke at least one invariant
	Wall            time.Duration
	Seed            uint64
	Parallel        int
	Failed          []Result
}

// hits is one more than how often a research run reaches each point in
// one keel dev lifetime (the matrix enumerates them; today 2 lease
// hand-overs, 5 model streams, 12 step commits); a drawn nth past the last
// hit leaves that incarnation alive, which the soak wants too.
var hits = map[string]int{
	harness.FaultLeaseHandover: 3,
	harness.FaultInModelStream: 6,
	harness.FaultInStepCommit:  13,
	harness.FaultAwaitApproval: 1,
	harness.FaultBeforeWake:    1,
	harness.FaultAfterDecision: 1,
	harness.FaultBeforeIntent:  1,
	harness.FaultAfterIntent:   1,
	harness.FaultAfterDispatch: 1,
	harness.FaultAfterResult:   1,
}

// SoakScenario draws run i of a soak: a destination contract, then one to
// MaxKills incarnations of keel dev, each killed at a random fault point
// (random point, random nth) or by the suite at a random delay. The runs
// after those are left alone until the run ends.
func SoakScenario(opt SoakOptions, i int) *Scenario {
	if opt.MaxKills <= 0 {
		opt.MaxKills = 3
	}
	if opt.KillMax <= 0 {
		opt.KillMax = 200 * time.Millisecond
	}
	opt.KillMin = min(max(opt.KillMin, 0), opt.KillMax)
	rng := rand.New(rand.NewPCG(opt.Seed, uint64(i)))
	var contract string
	// Drawn even when fixed, so that one seed kills the same way in
	// every contract.
	switch x := rng.IntN(100); {
	case opt.Contract != "" && opt.Contract != "mixed":
		contract = opt.Contract
	case x < 40:
		contract = "lookup"
	case x < 65:
		contract = "full"
	case x < 80:
		contract = "idempotent"
	default:
		contract = "none"
	}
	var incs []Incarnation
	var desc []string
	for range 1 + rng.IntN(opt.MaxKills) {
		var in Incarnation
		if rng.IntN(2) == 0 {
			p := Points[rng.IntN(len(Points))]
			in.Fault = fmt.Sprintf("%s:%d", p, 1+rng.IntN(hits[p]))
		} else {
			// At least 1ns: a zero delay would arm no kill at all.
			in.KillAfter = max(opt.KillMin+time.Duration(rng.Int64N(int64(opt.KillMax-opt.KillMin)+1)), 1)
		}
		incs = append(incs, in)
		desc = append(desc, in.String())
	}
	st := allowed(run.StatusCompleted)
	if contract == "none" {
		st = allowed(run.StatusCompleted, run.StatusNeedsHuman)
	}
	return &Scenario{Name: fmt.Sprintf("soak-%d [%s] %s", i, contract, strings.Join(desc, " ")), Contract: contract,
		Incarnations: incs, Expect: Expect{Statuses: st, Approval: true}}
}

// Soak plays opt.N random runs, cfg.Parallel at once, each in its own
// world (its own keel dev data directory and publication server), and
// checks every one with the same invariants as the matrix.
func Soak(ctx context.Context, cfg Config, opt SoakOptions) SoakSummary {
	start := time.Now()
	sum := SoakSummary{Seed: opt.Seed, Parallel: cfg.Parallel}
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int)
	for range cfg.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := Play(ctx, cfg, SoakScenario(opt, i))
				mu.Lock()
				sum.Runs++
				sum.Kills += r.Kills
				sum.RandomKills += r.RandomKills
				sum.Publications += r.Publications
				sum.Duplicates += r.Duplicates
				if r.EndedUnsettled > 0 {
					sum.EndedUnsettled++
				}
				if r.NeedsHumanMoved > 0 {
					sum.NeedsHumanMoved++
				}
				if r.NeedsHuman {
					sum.NeedsHuman++
				}
				if !r.Pass() {
					sum.Violations++
					sum.Failed = append(sum.Failed, r)
				}
				if cfg.Progress != nil && (!r.Pass() || sum.Runs%50 == 0) {
					fmt.Fprintf(cfg.Progress, "  [%d/%d] %s: %s\n", sum.Runs, opt.N, r.Name, summary(r))
				}
				mu.Unlock()
			}
		}()
	}
	for i := range opt.N {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	sum.Wall = time.Since(start)
	return sum
}

// PrintSoak writes the soak's table and its failed runs.
func PrintSoak(w io.Writer, s SoakSummary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "runs\tkills\tpublications\tduplicates\tended unsettled\tneeds_human moved\tneeds_human\tviolations\twall time\tparallel\tseed\t")
	fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t\n", s.Runs, s.Kills, s.Publications, s.Duplicates, s.EndedUnsettled,
		s.NeedsHumanMoved, s.NeedsHuman, s.Violations, s.Wall.Round(time.Second), s.Parallel, s.Seed)
	tw.Flush()
	fmt.Fprintf(w, "kills: %d at fault points, %d at random moments\n", s.Kills-s.RandomKills, s.RandomKills)
	fmt.Fprintf(w, "runs ended over an unsettled operation: %d; needs_human runs moved without a decision: %d\n", s.EndedUnsettled, s.NeedsHumanMoved)
	for _, r := range s.Failed {
		for _, v := range r.Violations {
			fmt.Fprintf(w, "  FAIL %s: %s\n", r.Name, v)
		}
		if r.Dir != "" {
			fmt.Fprintf(w, "       logs and data kept in %s\n", r.Dir)
		}
	}
}
