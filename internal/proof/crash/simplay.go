package crash

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"
)

// SimSummary is a simulation's outcome.
type SimSummary struct {
	Seed   uint64
	Store  string
	Lease  string
	Steps  int // steps played (worlds and the final check not counted)
	Kills  int // SIGKILLs of keel dev: the suite's, fault points', racing ones
	Worlds int
	Runs   int
	// Children are the runs among Runs that sub-agent calls started;
	// Deploys the starts of keel dev on another build.
	Children, Deploys int
	// Moves counts the accepted requests by kind (decide/api, settle/mcp…);
	// Refused the refused ones, Lost those whose answer was lost.
	Moves, Refused, Lost map[string]int
	Publications         int
	Safety, Liveness     []string
	Wall                 time.Duration
	// Script is where the script was written (a failing simulation, or
	// always when asked).
	Script string
	// Err is why the simulation stopped before its end (the world could
	// not be run), if it did.
	Err error
}

// Pass reports no violation and a simulation played to its end.
func (s SimSummary) Pass() bool { return len(s.Safety) == 0 && len(s.Liveness) == 0 && s.Err == nil }

// sim is a simulation being played.
type sim struct {
	cfg    Config
	opt    SimOptions
	w      *simWorld
	worlds int
	step   SimStep
	sum    *SimSummary
	log    io.Writer
}

// Sim plays a simulation: opt.Replay's steps, or those drawn from
// opt.Seed, until the budgets are spent. It writes the script to
// cfg.Dir/sim-script-SEED.jsonl when anything failed (the path is in the
// summary) and keeps failing worlds' directories.
func Sim(ctx context.Context, cfg Config, opt SimOptions) SimSummary {
	opt.fill()
	start := time.Now()
	sum := SimSummary{Seed: opt.Seed, Store: cfg.Store, Lease: cfg.Lease,
		Moves: map[string]int{}, Refused: map[string]int{}, Lost: map[string]int{}}
	steps := opt.Replay
	if steps == nil {
		steps = drawSteps(opt)
	}
	s := &sim{cfg: cfg, opt: opt, sum: &sum, log: opt.Log}
	if s.log == nil {
		s.log = io.Discard
	}
	for _, st := range steps {
		if ctx.Err() != nil {
			sum.Err = ctx.Err()
			break
		}
		s.step = st
		if err := s.play(ctx, st); err != nil {
			sum.Err = fmt.Errorf("step %s: %w", st, err)
			fmt.Fprintf(s.log, "  STOP %v\n", sum.Err)
			break
		}
		if st.Kind != stepWorld && st.Kind != stepFinalize {
			sum.Steps++
		}
	}
	if s.w != nil {
		// Stopped early: end the world's processes, keep its directory.
		s.sum.Kills += s.w.kills
		s.w.close()
		s.w = nil
	}
	sum.Wall = time.Since(start)
	if !sum.Pass() {
		p := filepath.Join(cfg.Dir, fmt.Sprintf("sim-script-%d.jsonl", opt.Seed))
		if err := writeScript(p, steps); err == nil {
			sum.Script = p
		}
	}
	return sum
}

// play plays one step, brings keel dev back if it died, and checks
// safety.
func (s *sim) play(ctx context.Context, st SimStep) error {
	if st.Kind == stepWorld || st.Kind == stepFinalize {
		if s.w != nil {
			if err := s.endWorld(ctx); err != nil {
				return err
			}
		}
		if st.Kind == stepFinalize {
			return nil
		}
		w, err := s.newWorld(ctx, st.Arg)
		if err != nil {
			return err
		}
		s.w = w
		s.sum.Worlds++
		fmt.Fprintf(s.log, "%s: world %d (%s) in %s\n", st, s.worlds, st.Arg, w.n.dir)
		return nil
	}
	if s.w == nil {
		return fmt.Errorf("a %s step before any world", st.Kind)
	}
	if err := s.w.ensure(ctx); err != nil {
		return err
	}
	note, err := s.act(ctx, st)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.log, "%s: %s\n", st, note)
	if err := s.w.ensure(ctx); err != nil {
		return err
	}
	return s.safety(ctx)
}

// act plays one step's action and says what happened.
func (s *sim) act(ctx context.Context, st SimStep) (string, error) {
	w := s.w
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	switch st.Kind {
	case stepWait:
		time.Sleep(st.Wait)
		return "waited", nil
	case stepKill:
		w.kill()
		return "killed keel dev", nil
	case stepRestart:
		w.n.keel.stop()
		return "restarted keel dev", w.start(ctx, "")
	case stepUpgrade:
		return s.upgrade(ctx, st)
	case stepFault:
		w.kill()
		return "killed keel dev; the next is armed at " + st.Arg, w.start(ctx, st.Arg)
	case stepQuiesce:
		return s.quiesce(ctx, false)
	case stepCreate:
		return s.create(cctx, st, s.cfg.agent()), nil
	case stepLead:
		return s.create(cctx, st, LeadAgent), nil
	case stepFork:
		return s.fork(cctx, st), nil
	}
	// The steps below may race a kill.
	var racing chan struct{}
	if st.Kill > 0 {
		racing = make(chan struct{})
		go func() {
			defer close(racing)
			time.Sleep(st.Kill)
			w.kill()
		}()
	}
	var note string
	switch st.Kind {
	case stepDecide:
		note = s.decide(cctx, st)
	case stepLimit:
		note = s.limit(cctx, st)
	case stepSettle:
		note = s.settle(cctx, st)
	case stepCancel:
		note = s.cancel(cctx, st)
	case stepInput:
		note = s.input(cctx, st)
	default:
		return "", fmt.Errorf("unknown step kind %q", st.Kind)
	}
	if racing != nil {
		<-racing
		note += " (keel dev killed " + st.Kill.String() + " after)"
	}
	return note, nil
}

// count files an answer under what it was for.
func (s *sim) count(what string, a answer) {
	switch {
	case a.ok:
		s.sum.Moves[what]++
	case a.lost:
		s.sum.Lost[what]++
	default:
		s.sum.Refused[what]++
	}
}

func (s *sim) safetyFail(r *simRun, format string, a ...any) {
	id := ""
	if r != nil {
		id = " run " + r.id
	}
	v := fmt.Sprintf("step %d%s: ", s.step.N, id) + fmt.Sprintf(format, a...)
	s.sum.Safety = append(s.sum.Safety, v)
	fmt.Fprintf(s.log, "  SAFETY %s\n", v)
	s.w.keep()
}

func (s *sim) livenessFail(r *simRun, format string, a ...any) {
	v := fmt.Sprintf("step %d run %s: ", s.step.N, r.id) + fmt.Sprintf(format, a...)
	s.sum.Liveness = append(s.sum.Liveness, v)
	fmt.Fprintf(s.log, "  LIVENESS %s\n", v)
	r.abandoned = true
	s.w.keep()
}

// pick is the target a step's Pick names among n candidates.
func pick(st SimStep, n int) int { return st.Pick % n }
