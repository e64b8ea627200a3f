package crash

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// The simulator (issue 40, "every run always has a next move") plays
// random interleavings of every channel a person or a client has on many
// runs at once, against SIGKILLs of keel dev at random moments and at
// fault points, and checks after every step that nothing happened twice,
// no decision was lost, no run ended over an unsettled operation and no
// needs_human run moved without a person (safety), and — at each
// quiesce — that every run not ended has a next move that works: a worker
// moves it, or the person's command its records name is accepted and
// moves it (liveness).
//
// A simulation is a list of steps drawn from a seed before any is played
// (draw does not look at the world), so a seed always plays the same
// script; a step names its target by a pick among the runs its kind
// applies to at that moment. A failing simulation writes its script as
// JSON lines, which `crash -replay FILE sim` plays again.

// SimOptions shape a simulation.
type SimOptions struct {
	Seed uint64
	// Actions is the budget of steps (default 200); Kills the budget of
	// keel dev SIGKILLs (default 0). The simulation draws steps until both
	// are spent (or MaxSteps, a bound on a kill budget never reached).
	Actions, Kills int
	// Episode is the steps played in one world (a publication server
	// with one contract and one keel dev data directory) before the
	// world is checked from its records and a new one begins (default
	// 150).
	Episode int
	// Pool is how many live runs the simulator creates or forks a world
	// keeps at most (default 6; the child runs of sub-agent calls are not
	// counted).
	Pool int
	// Contracts are the destination's promises the worlds rotate
	// through (default lookup, idempotent, none).
	Contracts []string
	// Replay plays these steps instead of drawing.
	Replay []SimStep
	// Log, when set, gets one line per step and per finding.
	Log io.Writer
}

func (o *SimOptions) fill() {
	if o.Actions <= 0 {
		o.Actions = 200
	}
	if o.Episode <= 0 {
		o.Episode = 150
	}
	if o.Pool <= 0 {
		o.Pool = 6
	}
	if len(o.Contracts) == 0 {
		o.Contracts = []string{"lookup", "idempotent", "none"}
	}
}

// SimStep is one step of a simulation's script.
type SimStep struct {
	N    int    `json:"n"`
	Kind string `json:"kind"`
	// Pick chooses the target among the runs (or items) the step applies
	// to when it is played, modulo their number.
	Pick int `json:"pick,omitempty"`
	// Arg is the kind's variant: a contract, a channel, a decision, a
	// settle outcome, an input policy, a fault point spec.
	Arg  string `json:"arg,omitempty"`
	Arg2 string `json:"arg2,omitempty"`
	// Kill > 0: keel dev is SIGKILLed this long after the step's request
	// was sent (a kill racing a decision). Wait is a pause's length.
	Kill time.Duration `json:"kill_ns,omitempty"`
	Wait time.Duration `json:"wait_ns,omitempty"`
}

func (s SimStep) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s", s.N, s.Kind)
	for _, a := range []string{s.Arg, s.Arg2} {
		if a != "" {
			b.WriteString(" " + a)
		}
	}
	if s.Pick != 0 {
		fmt.Fprintf(&b, " pick=%d", s.Pick)
	}
	if s.Kill > 0 {
		fmt.Fprintf(&b, " kill@%s", s.Kill)
	}
	if s.Wait > 0 {
		fmt.Fprintf(&b, " wait=%s", s.Wait)
	}
	return b.String()
}

// Step kinds.
const (
	stepWorld    = "world"    // a new world (Arg: the contract); the previous one is checked
	stepCreate   = "create"   // Arg: key new|none|repeat; Arg2: input policy, "+tight" for small limits
	stepLead     = "lead"     // create a research_lead run (its sub-agent calls start two child runs); Arg, Arg2 as create
	stepDecide   = "decide"   // Arg: channel api|link|mcp; Arg2: approve|deny
	stepLimit    = "limit"    // Arg: raise|stop, through POST /v1/runs/{id}/limits
	stepSettle   = "settle"   // Arg: channel api|mcp; Arg2: truth|give_up
	stepCancel   = "cancel"   //
	stepInput    = "input"    //
	stepFork     = "fork"     // Pick2 in Arg: which checkpoint
	stepWait     = "wait"     // let the runs go on for Wait
	stepKill     = "kill"     // SIGKILL keel dev now, start it again
	stepRestart  = "restart"  // stop keel dev (SIGTERM), start it again
	stepUpgrade  = "upgrade"  // stop keel dev (Arg2: kill|term), start it on another build (Arg: compatible|incompatible)
	stepFault    = "fault"    // SIGKILL keel dev, start it armed at Arg (point:nth)
	stepQuiesce  = "quiesce"  // liveness: wait for quiet, then play every run's next move
	stepFinalize = "finalize" // end of the simulation: the last world is checked
)

// simPoints are the fault points a simulation arms, with how many hits
// of each one keel dev lifetime may reach with several runs at once:
// the harness's (the sub-agent calls' among them: a child created, its
// parent's record of it not; a child ended, its parent not told; a
// parent that read its children's ends, their answers not recorded), and
// the decision path's before_wake (a decision through any channel is
// durable, the waiting run not yet woken), which a fault step arms two
// times in five.
var simPoints = map[string]int{
	"before_wake":    3,
	"await_approval": 4, "after_decision": 4, "before_intent": 3, "after_intent": 3,
	"after_dispatch": 3, "after_result": 3, "in_step_commit": 30, "lease_handover": 6, "in_model_stream": 12,
	"child_start": 2, "child_finish": 2, "parent_resume": 1,
}

// drawSteps draws the script of a simulation from its seed: a world
// every Episode steps, and between them the weighted kinds below.
func drawSteps(o SimOptions) []SimStep {
	rng := rand.New(rand.NewPCG(o.Seed, 0x5eed))
	var steps []SimStep
	kills := 0
	maxSteps := max(o.Actions, 1) * 4
	points := make([]string, 0, len(simPoints))
	for p := range simPoints {
		points = append(points, p)
	}
	slices.Sort(points)
	type weighted struct {
		kind string
		w    int
	}
	kinds := []weighted{
		{stepCreate, 12}, {stepLead, 3}, {stepDecide, 18}, {stepLimit, 4}, {stepSettle, 6}, {stepCancel, 3}, {stepInput, 4},
		{stepFork, 3}, {stepWait, 18}, {stepKill, 4}, {stepRestart, 2}, {stepUpgrade, 3}, {stepFault, 4}, {stepQuiesce, 3},
	}
	total := 0
	for _, k := range kinds {
		total += k.w
	}
	for i := 0; ; i++ {
		if len(steps) >= maxSteps || (i >= o.Actions && kills >= o.Kills) {
			break
		}
		if i%o.Episode == 0 {
			steps = append(steps, SimStep{Kind: stepWorld, Arg: o.Contracts[(i/o.Episode)%len(o.Contracts)]})
		}
		x := rng.IntN(total)
		var kind string
		for _, k := range kinds {
			if x < k.w {
				kind = k.kind
				break
			}
			x -= k.w
		}
		s := SimStep{Kind: kind, Pick: rng.IntN(1 << 16)}
		drawArgs(rng, &s, points)
		if s.kills() {
			kills++
		}
		steps = append(steps, s)
	}
	for _, k := range kinds {
		steps = ensureKind(rng, steps, k.kind, points)
	}
	steps = append(steps, SimStep{Kind: stepFinalize})
	for i := range steps {
		steps[i].N = i + 1
	}
	return steps
}

// kills reports whether the step kills keel dev, a kill the budget can
// count on (a fault point may not be reached).
func (s SimStep) kills() bool {
	return s.Kind == stepKill || s.Kind == stepFault || s.Kill > 0 || (s.Kind == stepUpgrade && s.Arg2 == "kill")
}

// ensureKind makes a short simulation play every kind of step too: when
// none of kind was drawn, it replaces a wait early in the script (between
// its first twentieth, so runs exist, and its first fifth), drawn from
// rng.
func ensureKind(rng *rand.Rand, steps []SimStep, kind string, points []string) []SimStep {
	if kind == stepWait || slices.ContainsFunc(steps, func(s SimStep) bool { return s.Kind == kind }) {
		return steps
	}
	var waits []int
	for i := len(steps) / 20; i < max(len(steps)/5, 1) && i < len(steps); i++ {
		if steps[i].Kind == stepWait {
			waits = append(waits, i)
		}
	}
	s := SimStep{Kind: kind, Pick: rng.IntN(1 << 16)}
	drawArgs(rng, &s, points)
	if len(waits) == 0 {
		return append(steps, s)
	}
	steps[waits[rng.IntN(len(waits))]] = s
	return steps
}

// drawArgs draws the arguments of step s of its kind, and whether a kill
// races its request, in the order the script's seed fixes.
func drawArgs(rng *rand.Rand, s *SimStep, points []string) {
	switch s.Kind {
	case stepCreate, stepLead:
		s.Arg = []string{"new", "new", "none", "repeat"}[rng.IntN(4)]
		s.Arg2 = []string{"queue", "reject", "interrupt", "rollback"}[rng.IntN(4)]
		if rng.IntN(3) == 0 {
			s.Arg2 += "+tight"
		}
	case stepDecide:
		s.Arg = []string{"api", "link", "mcp"}[rng.IntN(3)]
		s.Arg2 = "approve"
		if rng.IntN(6) == 0 {
			s.Arg2 = "deny"
		}
	case stepLimit:
		s.Arg = "raise"
		if rng.IntN(5) == 0 {
			s.Arg = "stop"
		}
	case stepSettle:
		s.Arg = []string{"api", "mcp"}[rng.IntN(2)]
		s.Arg2 = "truth"
		if rng.IntN(4) == 0 {
			s.Arg2 = "give_up"
		}
	case stepFork:
		s.Arg = fmt.Sprint(rng.IntN(64))
	case stepUpgrade:
		s.Arg = []string{"compatible", "incompatible"}[rng.IntN(2)]
		s.Arg2 = []string{"kill", "term"}[rng.IntN(2)]
	case stepWait:
		s.Wait = time.Duration(10+rng.IntN(290)) * time.Millisecond
	case stepFault:
		p := points[rng.IntN(len(points))]
		if rng.IntN(5) < 2 {
			p = "before_wake"
		}
		s.Arg = fmt.Sprintf("%s:%d", p, 1+rng.IntN(simPoints[p]))
	}
	// A kill racing the request: most land within the few
	// milliseconds a decision takes to commit, some later.
	if (s.Kind == stepDecide || s.Kind == stepLimit || s.Kind == stepSettle) && rng.IntN(5) == 0 {
		if rng.IntN(2) == 0 {
			s.Kill = time.Duration(rng.Int64N(int64(5*time.Millisecond))) + time.Microsecond
		} else {
			s.Kill = time.Duration(rng.Int64N(int64(30*time.Millisecond))) + time.Microsecond
		}
	}
}
