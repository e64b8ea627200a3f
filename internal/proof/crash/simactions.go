package crash

// The steps that move runs: each picks its target among the runs it
// applies to now, sends its request, and files the answer.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
)

// create creates a run of agent: the research agent, or research_lead
// (whose sub-agent calls start child runs).
func (s *sim) create(ctx context.Context, st SimStep, agent string) string {
	w := s.w
	if w.pooled() >= s.opt.Pool && (agent != LeadAgent || w.leads() > 0) {
		// One lead run is made past a full pool: every world may call
		// sub-agents.
		return "pool full"
	}
	policy, tight := strings.CutSuffix(st.Arg2, "+tight")
	req := api.CreateRunRequest{Agent: agent, Input: s.cfg.input(), InputPolicy: run.InputPolicy(policy)}
	switch {
	case tight && agent == LeadAgent:
		// Its two children get two tool calls each, their share of
		// what it has left: each fails at its share (a child asks no
		// raise of its parent's budget).
		req.Limits = &api.LimitsRequest{MaxToolCalls: 6}
	case tight:
		// The research run makes four tool calls: it pauses at two.
		req.Limits = &api.LimitsRequest{MaxToolCalls: 2}
	}
	key := ""
	switch st.Arg {
	case "new":
		key = fmt.Sprintf("sim-%d-%d", s.worlds, st.N)
	case "repeat":
		// A key of a run of the same agent: a lead step makes a lead.
		keys := make([]string, 0, len(w.keys))
		for k, r := range w.keys {
			if r.req.Agent == agent {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		if len(keys) == 0 {
			key = fmt.Sprintf("sim-%d-%d", s.worlds, st.N)
		} else {
			key = keys[pick(st, len(keys))]
			req = w.keys[key].req
		}
	}
	r, created, err := w.n.c.CreateRun(ctx, req, key)
	a := w.apiAnswer(err)
	s.count(map[bool]string{false: "create", true: "lead"}[agent == LeadAgent], a)
	if created {
		w.learn(r.Agent, r.AgentVersion)
	}
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
	if w.pooled() >= s.opt.Pool || len(w.runs) == 0 {
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
