package crash

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
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
	case stepFault:
		w.kill()
		return "killed keel dev; the next is armed at " + st.Arg, w.start(ctx, st.Arg)
	case stepQuiesce:
		return s.quiesce(ctx, false)
	case stepCreate:
		return s.create(cctx, st), nil
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

func (s *sim) create(ctx context.Context, st SimStep) string {
	w := s.w
	if len(w.live()) >= s.opt.Pool {
		return "pool full"
	}
	policy, tight := strings.CutSuffix(st.Arg2, "+tight")
	req := api.CreateRunRequest{Agent: s.cfg.agent(), Input: s.cfg.input(), InputPolicy: run.InputPolicy(policy)}
	if tight {
		// The research run makes four tool calls: it pauses at two.
		req.Limits = &api.LimitsRequest{MaxToolCalls: 2}
	}
	key := ""
	switch st.Arg {
	case "new":
		key = fmt.Sprintf("sim-%d-%d", s.worlds, st.N)
	case "repeat":
		keys := make([]string, 0, len(w.keys))
		for k := range w.keys {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if len(keys) == 0 {
			key = fmt.Sprintf("sim-%d-%d", s.worlds, st.N)
		} else {
			key = keys[pick(st, len(keys))]
			req = w.keys[key].req
		}
	}
	r, _, err := w.n.c.CreateRun(ctx, req, key)
	a := w.apiAnswer(err)
	s.count("create", a)
	if !a.ok {
		return "create: " + a.String()
	}
	if key != "" {
		if prev := w.keys[key]; prev != nil && prev.id != r.RunID {
			s.safetyFail(prev, "TWICE: a create repeated with key %s made a second run %s", key, r.RunID)
		}
	}
	sr := w.adopt(r.RunID, req)
	if key != "" && w.keys[key] == nil {
		sr.key = key
		w.keys[key] = sr
	}
	return fmt.Sprintf("created %s (key %q, %s)", r.RunID, key, st.Arg2)
}

// adopt adds a run the simulator learned of to the world (once).
func (w *simWorld) adopt(id string, req api.CreateRunRequest) *simRun {
	for _, r := range w.runs {
		if r.id == id {
			return r
		}
	}
	r := &simRun{id: id, req: req, decided: map[string]run.ApprovalStatus{}, unsure: map[string]string{}, movedAt: time.Now()}
	w.runs = append(w.runs, r)
	return r
}

func (s *sim) fork(ctx context.Context, st SimStep) string {
	w := s.w
	if len(w.live()) >= s.opt.Pool || len(w.runs) == 0 {
		return "pool full or no run"
	}
	from := w.runs[pick(st, len(w.runs))]
	page, err := w.n.c.ListCheckpoints(ctx, from.id, 0, 200)
	if err != nil || len(page.Checkpoints) == 0 {
		return fmt.Sprintf("fork %s: no checkpoint (%v)", from.id, err)
	}
	var i int
	fmt.Sscan(st.Arg, &i)
	cp := page.Checkpoints[i%len(page.Checkpoints)]
	key := fmt.Sprintf("sim-fork-%d-%d", s.worlds, st.N)
	r, _, err := w.n.c.Fork(ctx, from.id, cp.CheckpointID, key)
	a := w.apiAnswer(err)
	s.count("fork", a)
	if !a.ok {
		return fmt.Sprintf("fork %s at %s: %s", from.id, cp.CheckpointID, a)
	}
	sr := w.adopt(r.RunID, from.req)
	sr.key = key
	w.keys[key] = sr
	return fmt.Sprintf("forked %s at checkpoint %d into %s", from.id, cp.Seq, r.RunID)
}

func (s *sim) cancel(ctx context.Context, st SimStep) string {
	live := s.w.live()
	if len(live) == 0 {
		return "no live run"
	}
	r := live[pick(st, len(live))]
	_, err := s.w.n.c.Cancel(ctx, r.id)
	a := s.w.apiAnswer(err)
	s.count("cancel", a)
	return fmt.Sprintf("cancel %s: %s", r.id, a)
}

func (s *sim) input(ctx context.Context, st SimStep) string {
	live := s.w.live()
	if len(live) == 0 {
		return "no live run"
	}
	r := live[pick(st, len(live))]
	_, err := s.w.n.c.Input(ctx, r.id, fmt.Sprintf("Also mention step %d.", st.N))
	a := s.w.apiAnswer(err)
	s.count("input/"+string(r.req.InputPolicy), a)
	return fmt.Sprintf("input to %s (%s): %s", r.id, r.req.InputPolicy, a)
}

// pendingApprovals are the live runs' pending approvals (of tool, or
// any tool but the raise when tool is "-raise"), read now.
func (s *sim) pendingApprovals(ctx context.Context, tool string) []api.Approval {
	var out []api.Approval
	for _, r := range s.w.live() {
		aps, err := s.w.n.c.ListApprovals(ctx, r.id)
		if err != nil {
			continue
		}
		for _, a := range aps {
			if a.Status == run.ApprovalPending && (tool == "" || a.Tool == tool) {
				out = append(out, a)
			}
		}
	}
	return out
}

func (w *simWorld) run(id string) *simRun {
	for _, r := range w.runs {
		if r.id == id {
			return r
		}
	}
	return nil
}

// decided records a decision's answer: accepted decisions must stay; a
// lost answer leaves the person unsure, and a later step may retry it.
func (s *sim) decided(a api.Approval, channel, decision string, ans answer) {
	r := s.w.run(a.RunID)
	if r == nil {
		return
	}
	switch {
	case ans.ok:
		if prev, ok := r.decided[a.ApprovalID]; ok && prev != decisionStatus(decision) {
			s.safetyFail(r, "DECIDED TWICE: approval %s was %s, then a %s through %s was accepted too", a.ApprovalID, prev, decision, channel)
		}
		r.decided[a.ApprovalID] = decisionStatus(decision)
		delete(r.unsure, a.ApprovalID)
	case ans.lost:
		r.unsure[a.ApprovalID] = channel + " " + decision
	}
}

func (s *sim) decide(ctx context.Context, st SimStep) string {
	w := s.w
	aps := s.pendingApprovals(ctx, "")
	// A person whose answer was lost retries the same channel, on an
	// approval that may no longer look pending.
	retry := s.unsureApprovals(ctx)
	if len(retry) > 0 && (len(aps) == 0 || st.Pick%3 == 0) {
		a := retry[pick(st, len(retry))]
		how := strings.Fields(w.run(a.RunID).unsure[a.ApprovalID])
		return s.decideOn(ctx, a, how[0], how[1], true)
	}
	if len(aps) == 0 {
		return "no pending approval"
	}
	return s.decideOn(ctx, aps[pick(st, len(aps))], st.Arg, st.Arg2, false)
}

// unsureApprovals are the approvals whose decision's answer was lost.
func (s *sim) unsureApprovals(ctx context.Context) []api.Approval {
	var out []api.Approval
	for _, r := range s.w.live() {
		if len(r.unsure) == 0 {
			continue
		}
		aps, err := s.w.n.c.ListApprovals(ctx, r.id)
		if err != nil {
			continue
		}
		for _, a := range aps {
			if how, ok := r.unsure[a.ApprovalID]; ok && !strings.HasPrefix(how, "limits ") {
				out = append(out, a)
			}
		}
	}
	return out
}

func (s *sim) decideOn(ctx context.Context, a api.Approval, channel, decision string, retry bool) string {
	w := s.w
	var ans answer
	switch channel {
	case "link":
		link := w.links.get(a.RunID, a.ApprovalID)
		if link == "" {
			return "decide via link: no link delivered yet for " + a.ApprovalID
		}
		ans = w.decideLink(ctx, link, decision)
	case "mcp":
		ans = w.decideMCP(ctx, a, decision)
	default:
		ans = w.decideAPI(ctx, a, decision)
	}
	s.count("decide/"+channel, ans)
	s.decided(a, channel, decision, ans)
	what := fmt.Sprintf("%s %s of %s (%s) via %s", decision, a.ApprovalID, a.RunID, a.Tool, channel)
	if retry {
		what = "retry after a lost answer: " + what
		if !ans.ok && !ans.lost {
			s.retryRefused(ctx, a, channel, ans)
		}
	}
	return what + ": " + ans.String()
}

// retryRefused: a person's retry, after the answer to their decision was
// lost, was refused. If the refusal says the decision was taken
// (decided already, link used) the approval must show a decision; if it
// is still pending, the person was told their decision stands while
// keel lost it.
func (s *sim) retryRefused(ctx context.Context, a api.Approval, channel string, ans answer) {
	if !s.w.alive() {
		return
	}
	now, err := s.w.n.c.GetApproval(ctx, a.RunID, a.ApprovalID)
	if err != nil {
		return
	}
	if now.Status == run.ApprovalPending {
		s.safetyFail(s.w.run(a.RunID), "DECISION LOST: a decision on %s (%s) through %s lost its answer in a crash; retried, keel refused it (%s) and the approval is still pending",
			a.ApprovalID, a.Tool, channel, ans)
	}
}

func (s *sim) limit(ctx context.Context, st SimStep) string {
	aps := s.pendingApprovals(ctx, harness.RaiseLimitTool)
	// A retry of a raise whose answer was lost.
	for _, r := range s.w.live() {
		for aid, how := range r.unsure {
			if strings.HasPrefix(how, "limits ") && st.Pick%2 == 0 {
				return s.limitOn(ctx, api.Approval{RunID: r.id, ApprovalID: aid, Tool: harness.RaiseLimitTool}, strings.TrimPrefix(how, "limits "), true)
			}
		}
	}
	if len(aps) == 0 {
		return "no run paused at a limit"
	}
	return s.limitOn(ctx, aps[pick(st, len(aps))], st.Arg, false)
}

func (s *sim) limitOn(ctx context.Context, a api.Approval, decision string, retry bool) string {
	_, err := s.w.n.c.DecideLimit(ctx, a.RunID, api.LimitDecisionRequest{Decision: decision, Reason: "sim"})
	ans := s.w.apiAnswer(err)
	s.count("limit/"+decision, ans)
	s.decided(a, "limits", decision, ans)
	what := fmt.Sprintf("%s the limit of %s (%s)", decision, a.RunID, a.ApprovalID)
	if retry {
		what = "retry after a lost answer: " + what
		if !ans.ok && !ans.lost {
			s.retryRefused(ctx, a, "limits", ans)
		}
	}
	return what + ": " + ans.String()
}

func (s *sim) settle(ctx context.Context, st SimStep) string {
	w := s.w
	var ops []api.Operation
	for _, r := range w.live() {
		list, err := w.n.c.Operations(ctx, r.id)
		if err != nil {
			continue
		}
		for _, op := range list.Operations {
			if op.Status == run.OpNeedsHuman {
				ops = append(ops, op)
			}
		}
	}
	if len(ops) == 0 {
		return "no operation needs a person"
	}
	op := ops[pick(st, len(ops))]
	req, err := w.settleReq(op, st.Arg2)
	if err != nil {
		s.safetyFail(w.run(op.RunID), "%v", err)
		return err.Error()
	}
	ans := w.settle(ctx, st.Arg, op, req)
	s.count("settle/"+st.Arg, ans)
	return fmt.Sprintf("settle %s of %s as %s via %s: %s", op.OperationID, op.RunID, req.Outcome, st.Arg, ans)
}

// writeScript writes steps as JSON lines.
func writeScript(path string, steps []SimStep) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, st := range steps {
		if err := enc.Encode(st); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// ReadScript reads a script written by a failing simulation.
func ReadScript(r io.Reader) ([]SimStep, error) {
	var steps []SimStep
	dec := json.NewDecoder(r)
	for dec.More() {
		var st SimStep
		if err := dec.Decode(&st); err != nil {
			return nil, fmt.Errorf("script step %d: %w", len(steps)+1, err)
		}
		steps = append(steps, st)
	}
	if len(steps) == 0 || steps[0].Kind != stepWorld {
		return nil, fmt.Errorf("a script begins with a %q step", stepWorld)
	}
	return steps, nil
}

// PrintSim writes a simulation's table and its violations.
func PrintSim(w io.Writer, s SimSummary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "store\tlease\tsteps\tkills\tworlds\truns\tpublications\tsafety\tliveness\twall time\tseed\t")
	fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t\n", s.Store, s.Lease, s.Steps, s.Kills, s.Worlds, s.Runs, s.Publications,
		len(s.Safety), len(s.Liveness), s.Wall.Round(time.Second), s.Seed)
	tw.Flush()
	for _, m := range []struct {
		name string
		c    map[string]int
	}{{"accepted", s.Moves}, {"refused", s.Refused}, {"answer lost", s.Lost}} {
		keys := make([]string, 0, len(m.c))
		for k := range m.c {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %d", k, m.c[k]))
		}
		fmt.Fprintf(w, "%s: %s\n", m.name, strings.Join(parts, ", "))
	}
	for _, v := range s.Safety {
		fmt.Fprintf(w, "  SAFETY %s\n", v)
	}
	for _, v := range s.Liveness {
		fmt.Fprintf(w, "  LIVENESS %s\n", v)
	}
	if s.Err != nil {
		fmt.Fprintf(w, "  STOPPED %v\n", s.Err)
	}
	if s.Script != "" {
		store := "-store " + s.Store
		if s.Store == "dynamo" {
			store += " -moto python3"
		}
		fmt.Fprintf(w, "script: %s (replay: crash %s -lease %s -replay %s sim)\n", s.Script, store, s.Lease, s.Script)
	}
}
