package crash

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/testbin"
)

// build compiles a package of the module into dir. The stock keel program
// and the publication server without tags are testbin's, built once per
// test binary or once per make test.
func build(t *testing.T, dir, name, pkg string, tags ...string) string {
	t.Helper()
	testbin.SkipShort(t, "builds keel and kills keel dev processes")
	switch {
	case len(tags) == 0 && pkg == "github.com/keelrun/keel/cmd/keel":
		return testbin.Keel(t)
	case len(tags) == 0 && pkg == "github.com/keelrun/keel/internal/cmd/pubserver":
		return testbin.Pubserver(t)
	}
	out := filepath.Join(dir, name)
	args := []string{"build", "-buildvcs=false", "-o", out}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.Command("go", append(args, pkg)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// TestCrashSuite builds keel, the publication server and the deliberately
// broken keel once, then plays the fault-point matrix, a short soak and the
// broken build side by side, the matrix with the rows that kill the
// long-running task child (over two minutes each: the local executor sees
// a lost task only by its missing heartbeat). -short skips it.
func TestCrashSuite(t *testing.T) {
	bin := t.TempDir()
	keel := build(t, bin, "keel", "github.com/keelrun/keel/cmd/keel")
	pub := build(t, bin, "pubserver", "github.com/keelrun/keel/internal/cmd/pubserver")
	broken := build(t, bin, "keel-broken", "github.com/keelrun/keel/cmd/keel", "keel_skip_reconcile")
	// A hang guard. Cleanup, not defer: the parallel subtests run after
	// this function returns.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	config := func(t *testing.T, keelBin string) Config {
		cfg := Config{Keel: keelBin, PubServer: pub, Script: researchScript(t), Dir: t.TempDir(), Parallel: 3}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		return cfg
	}

	t.Run("matrix", func(t *testing.T) {
		t.Parallel()
		rows := Matrix(ctx, config(t, keel), MatrixOptions{Task: true})
		var buf bytes.Buffer
		PrintMatrix(&buf, rows)
		t.Logf("\n%s", buf.String())
		for _, r := range rows {
			if !r.Pass() {
				t.Errorf("%s: %s", r.Name, strings.Join(r.Violations, "; "))
			}
		}
		// Every point was reached and killed at least once, and every
		// scenario beyond the points has its row.
		killed := map[string]bool{}
		names := map[string]bool{}
		for _, r := range rows {
			names[r.Name] = true
			if p, _, ok := strings.Cut(r.Name, ":"); ok && r.Kills > 0 {
				killed[p] = true
			}
		}
		for _, p := range Points {
			if !killed[p] {
				t.Errorf("fault point %s was never killed", p)
			}
		}
		for _, n := range []string{TwoWritersName, StaleWriterName, CancelName, ProviderTimeoutName, StreamCutName} {
			if !names[n] {
				t.Errorf("no row %q", n)
			}
		}
	})

	// The same proof on the DynamoDB store and S3 artifacts (minidyn and
	// gofakes3 served by this process, a table and a bucket per
	// scenario): every fault point once, and two workers on one run.
	// `make crash STORE=dynamo` plays every hit and every other row.
	t.Run("dynamo", func(t *testing.T) {
		t.Parallel()
		a, err := StartLocalAWS()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(a.Close)
		cfg := Config{Keel: keel, PubServer: pub, Script: researchScript(t), Dir: t.TempDir(), Parallel: 2, Store: "dynamo", AWS: a}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		only := regexp.MustCompile(fmt.Sprintf(`^(%s):1$|^%s$`, strings.Join(Points, "|"), regexp.QuoteMeta(TwoWritersName)))
		rows := Matrix(ctx, cfg, MatrixOptions{Only: only, MaxNth: 1})
		var buf bytes.Buffer
		PrintMatrix(&buf, rows)
		t.Logf("on DynamoDB and S3:\n%s", buf.String())
		for _, r := range rows {
			if !r.Pass() {
				t.Errorf("%s: %s", r.Name, strings.Join(r.Violations, "; "))
			}
		}
		if len(rows) != len(Points)+1 {
			t.Errorf("%d rows, want one per fault point and the two-writer row", len(rows))
		}
		killed := map[string]bool{}
		for _, r := range rows {
			if p, _, ok := strings.Cut(r.Name, ":"); ok && r.Kills > 0 {
				killed[p] = true
			}
		}
		for _, p := range Points {
			if !killed[p] {
				t.Errorf("fault point %s was never killed on DynamoDB", p)
			}
		}
	})

	t.Run("soak", func(t *testing.T) {
		t.Parallel()
		n := 20
		seed := uint64(time.Now().UnixNano())
		sum := Soak(ctx, config(t, keel), SoakOptions{N: n, Seed: seed})
		var buf bytes.Buffer
		PrintSoak(&buf, sum)
		t.Logf("\n%s", buf.String())
		if sum.Runs != n || sum.Violations != 0 || sum.Duplicates != 0 {
			t.Errorf("soak (seed %d): %d/%d runs, %d with violations, %d duplicates", seed, sum.Runs, n, sum.Violations, sum.Duplicates)
		}
		if sum.Kills == 0 {
			t.Errorf("soak (seed %d): %d runs and not one kill", seed, n)
		}
	})

	// The suite can fail: without reconciliation, a crash after the
	// destination accepted the publication leads to a second one.
	t.Run("broken build is caught", func(t *testing.T) {
		t.Parallel()
		r := Play(ctx, config(t, broken), FaultScenario(harness.FaultAfterDispatch, 1, "lookup"))
		var buf bytes.Buffer
		PrintMatrix(&buf, []Result{r})
		t.Logf("keel built with -tags keel_skip_reconcile:\n%s", buf.String())
		if r.Pass() || r.Duplicates == 0 {
			t.Errorf("the suite passed a keel that skips reconciliation: %+v", r.Verdict)
		}
	})
}

func TestDynamoNeedsAnEndpoint(t *testing.T) {
	cfg := Config{Keel: os.Args[0], PubServer: os.Args[0], Script: researchScript(t), Dir: t.TempDir(), Store: "dynamo"}
	if err := cfg.Validate(); !errors.Is(err, ErrNoAWS) {
		t.Fatalf("Validate with -store dynamo and no endpoint = %v, want %v", err, ErrNoAWS)
	}
}

func TestSoakScenarioIsRepeatable(t *testing.T) {
	a, b := SoakScenario(SoakOptions{Seed: 7}, 3), SoakScenario(SoakOptions{Seed: 7}, 3)
	if a.Name != b.Name || len(a.Incarnations) != len(b.Incarnations) {
		t.Fatalf("same seed, different runs: %q vs %q", a.Name, b.Name)
	}
	seen := map[string]bool{}
	for i := range 200 {
		sc := SoakScenario(SoakOptions{Seed: 1}, i)
		seen[sc.Contract] = true
		for _, in := range sc.Incarnations {
			if in.Fault == "" && in.KillAfter <= 0 {
				t.Fatalf("%s: an armed incarnation without a fault or a kill", sc.Name)
			}
		}
	}
	for _, c := range []string{"full", "idempotent", "lookup", "none"} {
		if !seen[c] {
			t.Errorf("200 soak runs never drew contract %s", c)
		}
	}
}

// researchScript is the research agent's script, read as data.
func researchScript(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "fixture", "script.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
