package crash

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/proof/awslocal"
)

// TestSimScript: a seed always draws the same script, the budgets hold,
// and a written script reads back as it was.
func TestSimScript(t *testing.T) {
	opt := SimOptions{Seed: 9, Actions: 500, Kills: 60, Episode: 100}
	opt.fill()
	a, b := drawSteps(opt), drawSteps(opt)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("one seed drew two scripts")
	}
	kinds, worlds, kills := map[string]int{}, 0, 0
	for _, st := range a {
		kinds[st.Kind]++
		if st.Kind == stepWorld {
			worlds++
		}
		if st.kills() {
			kills++
		}
	}
	if steps := len(a) - worlds - 1; steps < opt.Actions || kills < opt.Kills {
		t.Errorf("%d steps and %d kills drawn, want at least %d and %d", steps, kills, opt.Actions, opt.Kills)
	}
	all := []string{stepCreate, stepLead, stepDecide, stepLimit, stepSettle, stepCancel, stepInput, stepFork, stepWait,
		stepKill, stepRestart, stepUpgrade, stepFault, stepQuiesce}
	for _, k := range all {
		if kinds[k] == 0 {
			t.Errorf("500 steps drew no %s", k)
		}
	}
	// A short simulation plays every kind too.
	for seed := range uint64(20) {
		short := drawSteps(SimOptions{Seed: seed, Actions: 40, Episode: 40, Pool: 4, Contracts: []string{"lookup"}})
		for _, k := range all {
			if !slices.ContainsFunc(short, func(st SimStep) bool { return st.Kind == k }) {
				t.Errorf("seed %d: 40 steps drew no %s", seed, k)
			}
		}
	}
	if a[0].Kind != stepWorld || a[len(a)-1].Kind != stepFinalize {
		t.Errorf("the script runs from %s to %s, want world to finalize", a[0].Kind, a[len(a)-1].Kind)
	}
	path := filepath.Join(t.TempDir(), "script.jsonl")
	if err := writeScript(path, a); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	back, err := ReadScript(f)
	if err != nil || !reflect.DeepEqual(back, a) {
		t.Fatalf("the script read back differs (%v)", err)
	}
	if _, err := ReadScript(strings.NewReader(`{"kind":"wait"}`)); err == nil {
		t.Error("a script without a world was read")
	}
}

// simConfig builds keel and the publication server once per test.
func simConfig(t *testing.T) Config {
	t.Helper()
	bin := t.TempDir()
	return Config{Keel: build(t, bin, "keel", "github.com/keelrun/keel/cmd/keel"),
		PubServer: build(t, bin, "pubserver", "github.com/keelrun/keel/internal/cmd/pubserver"),
		Script:    researchScript(t), Dir: t.TempDir()}
}

func reportSim(t *testing.T, sum SimSummary) {
	t.Helper()
	var buf bytes.Buffer
	PrintSim(&buf, sum)
	t.Logf("\n%s", buf.String())
	if !sum.Pass() {
		t.Errorf("the simulation (seed %d) found %d safety and %d liveness violations (stopped: %v); script %s",
			sum.Seed, len(sum.Safety), len(sum.Liveness), sum.Err, sum.Script)
	}
}

// playedNew: a drawn simulation played a restart on another build and a
// run whose sub-agent calls started children (drawSteps puts one of each
// kind in every script).
func playedNew(t *testing.T, sum SimSummary) {
	t.Helper()
	if sum.Deploys == 0 || sum.Moves["lead"] == 0 {
		t.Errorf("keel dev started on another build %d times, %d research_lead runs created: want both", sum.Deploys, sum.Moves["lead"])
	}
}

// TestSimulator plays a short simulation on SQLite, and on the DynamoDB
// store where python3 has moto (every request serialized), with short
// leases there. `make sim` plays the long one.
func TestSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("the simulator runs real keel dev processes for about a minute a store; -short skips it")
	}
	base := simConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	t.Cleanup(cancel)
	seed := uint64(time.Now().UnixNano())
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		cfg := base
		cfg.Dir = t.TempDir()
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		sum := Sim(ctx, cfg, SimOptions{Seed: seed, Actions: 400, Kills: 40, Episode: 100})
		reportSim(t, sum)
		playedNew(t, sum)
	})
	t.Run("dynamo", func(t *testing.T) {
		t.Parallel()
		if why := awslocal.MotoAvailable("python3"); why != "" {
			t.Skipf("the simulator on DynamoDB needs moto: %s", why)
		}
		m, err := awslocal.StartMoto(ctx, "python3", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		cfg := base
		cfg.Dir, cfg.Store, cfg.AWS, cfg.Lease = t.TempDir(), "dynamo", LocalAWS(m.URL, m.Close), "short"
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		sum := Sim(ctx, cfg, SimOptions{Seed: seed, Actions: 60, Kills: 6, Episode: 60, Pool: 4})
		reportSim(t, sum)
		playedNew(t, sum)
	})
}

// TestSimRegressions replays the scripts of testdata/sim, each the
// smallest form of a bug the simulator found (issue 40). Three decide
// through the API, a raise and a one-time link: the decision is stored,
// keel dev is killed before it wakes the run (fault point before_wake),
// and — for the raise and the link — the person retries the same
// channel. Before the decision path was one transition with a sweeper
// that wakes, each run stayed awaiting_approval forever with its approval
// decided (STUCK), and a link spent before its decision answered "used
// already" to the retry while the approval stayed pending (DECISION
// LOST). raised-then-deployed raises a paused run's limit, then keel dev
// restarts on a compatible build (its instructions only changed) and the
// publish is approved: the version check counted the applied raise as an
// open approval of a tool the new version lacks, and stopped the run for
// a person (STOPPED WITHOUT CAUSE), deny refused.
// not-happened-then-deployed kills keel dev after a publish's intent
// (contract none: a person must settle it), and the person settles it as
// not happened under a build whose publish_report schema changed: the
// version check handed the operation back as needs_human (its outcome
// unknown, no attempt since), the person settled it again, and so on
// forever (op_needs_human before its op_intent; NOT ENDED).
func TestSimRegressions(t *testing.T) {
	if testing.Short() {
		t.Skip("replays real keel dev processes; -short skips it")
	}
	scripts, err := filepath.Glob(filepath.Join("testdata", "sim", "*.jsonl"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts in testdata/sim (%v)", err)
	}
	base := simConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	for _, p := range scripts {
		t.Run(strings.TrimSuffix(filepath.Base(p), ".jsonl"), func(t *testing.T) {
			t.Parallel()
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			steps, err := ReadScript(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			cfg := base
			cfg.Dir = t.TempDir()
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			sum := Sim(ctx, cfg, SimOptions{Replay: steps})
			reportSim(t, sum)
			// The script's point is a kill at a fault point (keel dev
			// died there: a kill past the script's own), or a build
			// other than the run's: if keel dev never died at its
			// point, or never ran another build, the script proves
			// nothing.
			own, upgrades := 0, 0
			for _, st := range steps {
				if st.kills() {
					own++
				}
				if st.Kind == stepUpgrade {
					upgrades++
				}
			}
			if slices.ContainsFunc(steps, func(st SimStep) bool { return st.Kind == stepFault }) && sum.Kills <= own {
				t.Errorf("%d kills, the script's own %d: its fault point was never reached", sum.Kills, own)
			}
			if upgrades > 0 && sum.Deploys == 0 {
				t.Errorf("keel dev never ran another build")
			}
		})
	}
}

// TestCancelRacingApproval: a cancel accepted while the Step is inside
// the model call that proposes the effect ends the run cancelled; no
// approval is requested after it (seed 21 of the simulator).
func TestCancelRacingApproval(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real keel dev; -short skips it")
	}
	cfg := simConfig(t)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	sc, err := CancelRacingApprovalScenario(cfg.Script)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := Play(ctx, cfg, sc)
	var buf bytes.Buffer
	PrintMatrix(&buf, []Result{r})
	t.Logf("\n%s", buf.String())
	if !r.Pass() {
		t.Errorf("%s: %s (kept in %s)", r.Name, strings.Join(r.Violations, "; "), r.Dir)
	}
}
