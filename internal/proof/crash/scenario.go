package crash

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/faults"
	"github.com/keelrun/keel/internal/kernel/run"
)

// Config names the binaries under test and how to run scenarios.
type Config struct {
	Keel      string // the keel binary (keel dev, keel step, keel task)
	PubServer string // the publication server binary
	// Script is the scripted model the keel binary's research agent
	// plays (internal/fixture/script.json): the stream-cut row adds its
	// fault to it. The suite reads it as data: it drives the keel binary
	// from outside and links no agent.
	Script []byte
	// Dir is the scratch root; each scenario gets a directory under it,
	// removed when it passes unless Keep.
	Dir  string
	Keep bool
	// Store is the backend under test: "sqlite" (default) or "dynamo"
	// (DynamoDB store and S3 artifacts at AWS, a table and a bucket per
	// scenario).
	Store string
	// AWS is the endpoint of the dynamo scenarios (required with "dynamo").
	AWS *AWS
	// Lease is keel dev's lease settings: "short" (KEEL_STEP_BUDGET and
	// KEEL_LEASE_TTL of a few seconds: a run is stepped again soon after
	// a crash), "default" (keel dev's own: nothing set), or "" for short
	// on dynamo, where a dead incarnation's lease runs out its TTL, and
	// default on sqlite, where a restarted keel dev ends it.
	Lease string
	// Parallel bounds the scenarios played at once (default 3).
	Parallel int
	// Progress, when set, gets one line per finished scenario.
	Progress io.Writer
	// ScenarioTimeout is a hang guard per scenario (default 8m; the task
	// rows wait over two minutes for a heartbeat timeout).
	ScenarioTimeout time.Duration

	// Counter, when set, plays a program's own agent instead of the
	// research fixture (keel crashtest): no publication server is
	// started, Keel is the program's binary, its effects are observed
	// through Counter, and Agent, Input and Env say what to run.
	Counter EffectCounter
	Agent   string   // the agent to run (default AgentName)
	Input   string   // the run's input
	Env     []string // added to every program process (its destination, credentials)
}

func (c Config) agent() string {
	if c.Agent != "" {
		return c.Agent
	}
	return AgentName
}

func (c Config) input() string {
	if c.Input != "" {
		return c.Input
	}
	return "Write a short report on durable agents and publish it."
}

// ErrNoAWS: the dynamo backend was asked for without an endpoint.
var ErrNoAWS = errors.New("-store dynamo needs an AWS endpoint (LocalAWS, or ExternalAWS for LocalStack)")

// Validate checks the configuration and fills defaults.
func (c *Config) Validate() error {
	if c.Store == "" {
		c.Store = "sqlite"
	}
	switch c.Store {
	case "sqlite":
	case "dynamo":
		if c.AWS == nil {
			return ErrNoAWS
		}
	default:
		return fmt.Errorf("-store %q: want sqlite or dynamo", c.Store)
	}
	switch c.Lease {
	case "":
		c.Lease = map[string]string{"sqlite": "default", "dynamo": "short"}[c.Store]
	case "default", "short":
	default:
		return fmt.Errorf("-lease %q: want default or short", c.Lease)
	}
	bins := []string{c.Keel}
	if c.Counter == nil {
		if len(c.Script) == 0 {
			return errors.New("no research script (-script internal/fixture/script.json)")
		}
		bins = append(bins, c.PubServer)
	}
	for _, b := range bins {
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("binary: %w", err)
		}
	}
	if c.Dir == "" {
		return errors.New("crash: Config.Dir is required")
	}
	if c.Parallel <= 0 {
		c.Parallel = 3
	}
	if c.ScenarioTimeout <= 0 {
		c.ScenarioTimeout = 8*time.Minute + 4*c.leaseWait()
	}
	return nil
}

// Incarnation arms one keel dev process of a scenario.
type Incarnation struct {
	// Fault is its KEEL_FAULTPOINT (name[:nth]); empty: none.
	Fault string
	// KillAfter > 0: the suite SIGKILLs its process group this long after
	// it serves (a kill at a random moment).
	KillAfter time.Duration
}

func (in Incarnation) String() string {
	switch {
	case in.Fault != "":
		return in.Fault
	case in.KillAfter > 0:
		return "kill@" + in.KillAfter.Round(time.Millisecond).String()
	}
	return "-"
}

// Scenario is one row of the suite.
type Scenario struct {
	Name string
	// Contract is what the destination promises, and what Keel is told it
	// promises: full, idempotent, lookup or none.
	Contract string
	// Hang: the destination records a POST and never answers it.
	Hang           bool
	PublishTimeout time.Duration
	// Env is added to every keel process (spill, tool delay, task faults).
	Env []string
	// Script replaces the research agent's model script.
	Script []byte
	// Incarnations arm the successive keel dev processes; those past the
	// end run without faults until the run ends.
	Incarnations []Incarnation
	Expect       Expect

	// idle: the scenario spends most of its time waiting (for a
	// heartbeat timeout), so the matrix plays it outside its bound.
	idle bool

	// play runs the scenario (nil: the standard drive).
	play func(ctx context.Context, n *node, st *driveState, res *Result) (Evidence, error)
	// onTick runs at every driver tick while keel dev serves.
	onTick func(ctx context.Context, n *node, st *driveState) error
	// check adds the scenario's own invariants.
	check func(ev Evidence, res *Result)
}

// Result is one played scenario.
type Result struct {
	Name  string `json:"name"`
	RunID string `json:"run_id"`
	// Kills are the SIGKILLs that happened: keel dev deaths and deaths of
	// its long-running task child.
	Kills int `json:"kills"`
	// RandomKills are those of Kills the suite made at a random moment.
	RandomKills int `json:"random_kills"`
	Verdict
	Notes []string `json:"notes,omitempty"`
	// Effects are the run's effects, one row each (EffectCounter only).
	Effects []EffectRow `json:"effects,omitempty"`
	// Hits counts the fault points reached, by name, in processes armed
	// with KEEL_FAULTPOINT=* (faults.CountAll).
	Hits map[string]int `json:"hits,omitempty"`
	// Explain are the events of a failed run that tell its effects' story
	// (operations, tool calls, approvals, kills recovered from).
	Explain []string `json:"explain,omitempty"`
	// RunTime is from the run's first event to its last.
	RunTime time.Duration `json:"run_time_ns"`
	Dir     string        `json:"dir,omitempty"`
	Elapsed time.Duration `json:"elapsed_ns"`
}

// Pass reports whether every invariant held.
func (r Result) Pass() bool { return len(r.Violations) == 0 }

// Verified reports whether every invariant held and every operation's
// outcome was checked at its destination (Unverified is empty).
func (r Result) Verified() bool { return r.Pass() && len(r.Unverified) == 0 }

// Outcome is the row's result: PASS, FAIL or UNVERIFIED.
func (r Result) Outcome() string {
	switch {
	case !r.Pass():
		return "FAIL"
	case !r.Verified():
		return "UNVERIFIED"
	}
	return "PASS"
}

func (r *Result) fail(format string, a ...any) {
	r.Violations = append(r.Violations, fmt.Sprintf(format, a...))
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// Play runs one scenario in its own directory and checks it. Every
// process it starts is ended before it returns.
func Play(ctx context.Context, cfg Config, sc *Scenario) Result {
	start := time.Now()
	res := Result{Name: sc.Name}
	if cfg.ScenarioTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.ScenarioTimeout)
		defer cancel()
	}
	dir, err := os.MkdirTemp(cfg.Dir, unsafeName.ReplaceAllString(sc.Name, "_")+"-")
	if err != nil {
		res.fail("scratch dir: %v", err)
		return res
	}
	res.Dir = dir
	n := newNode(cfg, sc, dir)
	st := &driveState{key: "crash-" + randHex(8)}
	ev, err := func() (Evidence, error) {
		defer n.close()
		if sc.Script != nil {
			path := filepath.Join(dir, "script.json")
			if err := os.WriteFile(path, sc.Script, 0o644); err != nil {
				return Evidence{}, err
			}
			n.sc = withEnv(sc, "KEEL_MODEL=scripted:"+path)
		}
		if cfg.Counter == nil {
			if err := n.startPub(ctx); err != nil {
				return Evidence{}, err
			}
		}
		if cfg.Store == "dynamo" {
			table, bucket, err := cfg.AWS.newWorld(ctx)
			if err != nil {
				return Evidence{}, err
			}
			n.table, n.bucket = table, bucket
		}
		if sc.play != nil {
			return sc.play(ctx, n, st, &res)
		}
		if err := n.drive(ctx, st); err != nil {
			return Evidence{}, err
		}
		return n.finish(ctx, st)
	}()
	res.RunID = st.runID
	res.Kills += st.kills + taskKills(dir)
	res.RandomKills = st.randomKills
	if err != nil {
		res.Status = "?"
		res.fail("scenario could not be played: %v", err)
	} else {
		v := Check(ev, sc.Expect)
		v.Violations = append(res.Violations, v.Violations...)
		res.Verdict = v
		if ev.Observed != nil {
			res.Effects = effectRows(ev)
		}
		res.Hits = countHits(dir)
		if n := len(ev.Events); n > 0 {
			res.RunTime = ev.Events[n-1].Time.Sub(ev.Events[0].Time)
		}
		if sc.check != nil {
			sc.check(ev, &res)
		}
	}
	if res.Kills < sc.Expect.Kills {
		res.fail("fault point not reached: %d kills, want %d", res.Kills, sc.Expect.Kills)
	}
	if !res.Verified() && ev.Observed != nil {
		res.Explain = explain(ev)
	}
	res.Elapsed = time.Since(start)
	if res.Verified() && !cfg.Keep {
		_ = os.RemoveAll(dir)
		res.Dir = ""
		if n.table != "" {
			// A hang guard of its own: the scenario's may be spent.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			_ = cfg.AWS.dropWorld(dctx, n.table, n.bucket)
			cancel()
		}
	} else if n.table != "" {
		res.Notes = append(res.Notes, fmt.Sprintf("table and bucket %s kept at %s", n.table, cfg.AWS.URL))
	}
	return res
}

func withEnv(sc *Scenario, kv ...string) *Scenario {
	c := *sc
	c.Env = append(append([]string(nil), sc.Env...), kv...)
	return &c
}

// finish reads the evidence: the API while keel dev serves, then the
// files once it has stopped.
func (n *node) finish(ctx context.Context, st *driveState) (Evidence, error) {
	var ev Evidence
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := n.collectAPI(cctx, st.runID, &ev); err != nil {
		return ev, err
	}
	n.keel.stop()
	if err := n.collectRecords(ctx, st.runID, &ev); err != nil {
		return ev, err
	}
	if n.cfg.Counter != nil {
		var err error
		if ev.Observed, err = n.cfg.Counter.Observe(ctx, n.cfg.agent(), n.data, ev.Ops); err != nil {
			return ev, fmt.Errorf("observing the destination: %w", err)
		}
	}
	return ev, nil
}

// countHits counts the fault points reached in the scenario's program
// logs, as written under KEEL_FAULTPOINT=*.
func countHits(dir string) map[string]int {
	logs, _ := filepath.Glob(filepath.Join(dir, "keel-dev-*.log"))
	var hits map[string]int
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if p, ok := strings.CutPrefix(line, faults.HitPrefix); ok {
				if hits == nil {
					hits = map[string]int{}
				}
				hits[strings.TrimSpace(p)]++
			}
		}
	}
	return hits
}

// taskKills counts long-running task children keel dev saw die by
// SIGKILL (their fault point) in the scenario's keel dev logs.
func taskKills(dir string) int {
	logs, _ := filepath.Glob(filepath.Join(dir, "keel-dev-*.log"))
	n := 0
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "local task exited") && strings.Contains(line, "signal: killed") {
				n++
			}
		}
	}
	return n
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// eventData decodes an event's data object.
func eventData(raw json.RawMessage) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

// allowed lists the statuses a scenario may end in.
func allowed(s ...run.Status) []run.Status { return s }
