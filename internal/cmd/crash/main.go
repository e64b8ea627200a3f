// Command crash runs Keel's crash suite (package internal/proof/crash):
//
//	crash [flags] matrix     every fault point and scenario, one row each
//	crash [flags] soak       N randomized runs killed at random moments
//	crash [flags] sim        the simulator: random interleavings of every
//	                         channel over many runs, SIGKILLs, safety and
//	                         liveness after every step (-replay FILE plays
//	                         a failing simulation's script again)
//
// `make crash`, `make soak N=…`, `make sim` and `make soak-dynamo` (the soak on the
// DynamoDB store, moto serialized) build bin/keel and bin/pubserver and
// run it. The exit status is 1 when any invariant broke, 2 on a usage
// error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/keelrun/keel/internal/proof/awslocal"
	"github.com/keelrun/keel/internal/proof/crash"
	"github.com/keelrun/keel/internal/proof/crash/localaws"
)

func main() {
	os.Exit(run())
}

// options are the command line.
type options struct {
	keel, pub, script, store, lease, contract, only, dir, moto string
	parallel, n, actions, kills, episode, pool                 int
	replay                                                     string
	verbose                                                    bool
	seed                                                       uint64
	task, keep                                                 bool
	killMin, killMax                                           time.Duration
	onlyRE                                                     *regexp.Regexp
}

// parseFlags reads the command line; a usage error is reported and ends
// the program with status 2.
func parseFlags() (options, bool) {
	var o options
	flag.StringVar(&o.keel, "keel", "bin/keel", "keel binary under test")
	flag.StringVar(&o.pub, "pubserver", "bin/pubserver", "publication server binary")
	flag.StringVar(&o.script, "script", "internal/fixture/script.json", "the research agent's model script (the stream-cut row adds a fault to it)")
	flag.StringVar(&o.store, "store", "sqlite", "store backend: sqlite, or dynamo (DynamoDB and S3: moto started by -moto, else at AWS_ENDPOINT_URL when set, e.g. LocalStack, else served in-process by minidyn and gofakes3)")
	flag.StringVar(&o.moto, "moto", "", "with -store dynamo: start moto with this python (e.g. python3; moto[server] 5 installed) on a loopback port, every request serialized, and stop it at the end")
	flag.StringVar(&o.lease, "lease", "", "keel dev's lease settings: default (keel dev's own: KEEL_STEP_BUDGET and KEEL_LEASE_TTL unset) or short (2s and 1s); empty: short on dynamo, default on sqlite")
	flag.StringVar(&o.contract, "contract", "mixed", "soak: the destination's contract of every run: lookup (honours lookups, ignores keys), idempotent (honours keys, no lookup), none (promises nothing), full (both), or mixed (drawn per run)")
	killMS := flag.String("kill-ms", "0:200", "soak: the suite's random-delay kills land MIN:MAX milliseconds (uniform) after keel dev serves")
	flag.IntVar(&o.parallel, "parallel", 3, "scenarios played at once")
	flag.IntVar(&o.n, "n", 100, "soak: number of runs")
	flag.Uint64Var(&o.seed, "seed", 0, "soak and sim: random seed (0: from the clock)")
	flag.IntVar(&o.actions, "actions", 2000, "sim: the budget of steps")
	flag.IntVar(&o.kills, "kills", 100, "sim: the budget of keel dev SIGKILLs (steps are drawn until both budgets are spent)")
	flag.IntVar(&o.episode, "episode", 150, "sim: steps played in one world (one destination contract, one data directory) before it is checked and replaced")
	flag.IntVar(&o.pool, "pool", 6, "sim: live runs a world keeps at most (those it creates or forks; child runs of sub-agent calls are not counted)")
	flag.StringVar(&o.replay, "replay", "", "sim: play this script (written by a failing simulation) instead of drawing one")
	flag.BoolVar(&o.verbose, "v", false, "sim: print every step and what it did")
	flag.StringVar(&o.only, "only", "", "matrix: only rows whose name matches this regexp")
	flag.BoolVar(&o.task, "task", true, "matrix: include the rows that kill the long-running task child (over two minutes each, run in parallel)")
	flag.BoolVar(&o.keep, "keep", false, "keep the directories of passing scenarios too")
	flag.StringVar(&o.dir, "dir", "", "scratch directory (default: a new temporary one)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: crash [flags] matrix|soak|sim\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || !slices.Contains([]string{"matrix", "soak", "sim"}, flag.Arg(0)) {
		flag.Usage()
		return o, false
	}
	var err error
	if o.only != "" {
		if o.onlyRE, err = regexp.Compile(o.only); err != nil {
			err = fmt.Errorf("-only: %w", err)
		}
	}
	if err == nil {
		o.killMin, o.killMax, err = parseKillMS(*killMS)
	}
	if err == nil && !slices.Contains(crash.Contracts, o.contract) {
		err = fmt.Errorf("-contract %q: want one of %s", o.contract, strings.Join(crash.Contracts, ", "))
	}
	if err == nil && (o.actions <= 0 || o.kills < 0 || o.episode <= 0 || o.pool <= 0) {
		err = errors.New("-actions, -episode and -pool must be positive, -kills not negative")
	}
	if err == nil && o.moto != "" && o.store != "dynamo" {
		err = errors.New("-moto serves the dynamo store: add -store dynamo")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash:", err)
		return o, false
	}
	return o, true
}

// parseKillMS reads -kill-ms MIN:MAX (milliseconds, 0 ≤ MIN ≤ MAX, MAX > 0).
func parseKillMS(s string) (time.Duration, time.Duration, error) {
	bad := fmt.Errorf("-kill-ms %q: want MIN:MAX in milliseconds with 0 <= MIN <= MAX and MAX > 0, e.g. 15:250", s)
	lo, hi, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, bad
	}
	a, err1 := strconv.Atoi(lo)
	b, err2 := strconv.Atoi(hi)
	if err1 != nil || err2 != nil || a < 0 || a > b || b == 0 {
		return 0, 0, bad
	}
	return time.Duration(a) * time.Millisecond, time.Duration(b) * time.Millisecond, nil
}

func run() int {
	o, ok := parseFlags()
	if !ok {
		return 2
	}
	if o.dir != "" {
		if err := os.MkdirAll(o.dir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "crash: -dir:", err)
			return 2
		}
	} else {
		d, err := os.MkdirTemp("", "keel-crash-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "crash:", err)
			return 1
		}
		o.dir = d
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	script, err := os.ReadFile(o.script)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash: -script:", err)
		return 2
	}
	cfg := crash.Config{Keel: o.keel, PubServer: o.pub, Script: script, Dir: o.dir, Keep: o.keep, Store: o.store, Lease: o.lease,
		Parallel: o.parallel, Progress: os.Stderr}
	where := cfg.Store
	if cfg.Store == "dynamo" {
		// Closed on every way out of run, failures and interrupts too:
		// a moto started here must not outlive the soak.
		a, err := awsEndpoint(ctx, o.moto, o.dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "crash:", err)
			return 1
		}
		defer a.Close()
		cfg.AWS = a
		where = "dynamo (DynamoDB and S3 at " + a.URL + ")"
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "crash:", err)
		return 2
	}
	where += ", " + cfg.Lease + " leases"
	code := play(ctx, cfg, o, where)
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "crash: interrupted; the runs cut short are reported as failed")
		return 130
	}
	if code == 0 && !o.keep {
		_ = os.RemoveAll(filepath.Join(o.dir, "moto")) // its log
		_ = os.Remove(o.dir)                           // empty when everything passed
	}
	return code
}

// play runs the matrix or the soak and returns the exit status.
func play(ctx context.Context, cfg crash.Config, o options, where string) int {
	start := time.Now()
	switch flag.Arg(0) {
	case "matrix":
		fmt.Fprintf(os.Stderr, "crash matrix: %s on %s, %d at once (scratch %s)\n", o.keel, where, cfg.Parallel, o.dir)
		rows := crash.Matrix(ctx, cfg, crash.MatrixOptions{Only: o.onlyRE, Task: o.task})
		crash.PrintMatrix(os.Stdout, rows)
		failed := crash.Failed(rows)
		fmt.Printf("%d rows, %d failed, %s\n", len(rows), failed, time.Since(start).Round(time.Second))
		if failed > 0 || len(rows) == 0 {
			return 1
		}
	case "soak":
		s := o.seed
		if s == 0 {
			s = uint64(time.Now().UnixNano())
		}
		fmt.Fprintf(os.Stderr, "crash soak: %d runs on %s, contract %s, random kills %s to %s after serving, %d at once, seed %d (scratch %s)\n",
			o.n, where, o.contract, o.killMin, o.killMax, cfg.Parallel, s, o.dir)
		sum := crash.Soak(ctx, cfg, crash.SoakOptions{N: o.n, Seed: s, Contract: o.contract, KillMin: o.killMin, KillMax: o.killMax})
		crash.PrintSoak(os.Stdout, sum)
		if sum.Violations > 0 || sum.Runs < o.n {
			return 1
		}
	case "sim":
		return simulate(ctx, cfg, o, where)
	}
	return 0
}

// awsEndpoint is the DynamoDB and S3 endpoint of -store dynamo: moto
// started with python (internal/proof/awslocal's launcher: loopback, requests
// served one at a time, its log in dir/moto), the one at AWS_ENDPOINT_URL
// (LocalStack) with the usual AWS configuration, or one served by this
// process. Each outlives every keel process the suite kills.
func awsEndpoint(ctx context.Context, python, dir string) (*crash.AWS, error) {
	if python != "" {
		if why := awslocal.MotoAvailable(python); why != "" {
			return nil, fmt.Errorf("-moto: %s", why)
		}
		mdir := filepath.Join(dir, "moto")
		if err := os.MkdirAll(mdir, 0o755); err != nil {
			return nil, err
		}
		m, err := awslocal.StartMoto(ctx, python, mdir)
		if err != nil {
			return nil, fmt.Errorf("-moto: %w", err)
		}
		return crash.LocalAWS(m.URL, m.Close), nil
	}
	endpoint := os.Getenv("AWS_ENDPOINT_URL")
	if endpoint == "" {
		s, err := localaws.Start()
		if err != nil {
			return nil, err
		}
		return crash.LocalAWS(s.URL, s.Close), nil
	}
	var opts []func(*config.LoadOptions) error
	if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		// LocalStack takes any credentials; the keel processes get the
		// same ones.
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration for %s: %w", endpoint, err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	cfg.BaseEndpoint = aws.String(endpoint)
	return crash.ExternalAWS(cfg, endpoint), nil
}

// simulate runs the simulator (or replays a script) and returns the exit
// status.
func simulate(ctx context.Context, cfg crash.Config, o options, where string) int {
	opt := crash.SimOptions{Seed: o.seed, Actions: o.actions, Kills: o.kills, Episode: o.episode, Pool: o.pool}
	if opt.Seed == 0 {
		opt.Seed = uint64(time.Now().UnixNano())
	}
	if o.replay != "" {
		f, err := os.Open(o.replay)
		if err != nil {
			fmt.Fprintln(os.Stderr, "crash: -replay:", err)
			return 2
		}
		opt.Replay, err = crash.ReadScript(f)
		f.Close()
		if err != nil {
			fmt.Fprintln(os.Stderr, "crash: -replay:", err)
			return 2
		}
	}
	if o.verbose {
		opt.Log = os.Stderr
	}
	what := fmt.Sprintf("seed %d, %d steps and %d kills at least", opt.Seed, opt.Actions, opt.Kills)
	if o.replay != "" {
		what = fmt.Sprintf("replaying %s (%d steps)", o.replay, len(opt.Replay))
	}
	fmt.Fprintf(os.Stderr, "crash sim: %s on %s, %d runs a world, %d steps a world (scratch %s)\n", what, where, opt.Pool, opt.Episode, o.dir)
	sum := crash.Sim(ctx, cfg, opt)
	crash.PrintSim(os.Stdout, sum)
	if !sum.Pass() {
		return 1
	}
	return 0
}
