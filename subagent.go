package keel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/keelrun/keel/internal/agentdef"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// SubAgent is a tool that hands part of the work to another agent of the
// same program, named agent: the model calls it with an input (the
// child's task, {"input": "..."}), and Keel starts a child run of that
// agent. The parent's Step then ends and holds no worker until every
// sub-agent call of that model answer has ended; each call is answered
// with its child's final answer (and the names and hashes of the
// artifacts the child saved), or, when the child failed, was cancelled or
// needs a person, with a message saying so that the model can act on.
//
// The contract:
//
//   - Exactly once. Starting the child follows the operation protocol:
//     its run id is derived from the parent's run and operation, so a
//     crash at any point leaves one child, found and resumed, never two.
//   - Budget. The child's limits are its share of what the parent has
//     left when it starts (tokens, spend, tool calls: the remainder
//     divided among the answer's sub-agent calls; the parent's deadline),
//     narrowed by the child agent's own [Agent.Limits] and by
//     [SubAgentLimits], never widened. What a child used is added to its
//     parent's use when it ends; the rest is the parent's again.
//   - Permissions. A child runs in a session of its own, so confirm-once
//     grants given to the parent do not cover it unless [InheritGrants]
//     is given; its effects ask for approval like any run's.
//   - Cancel. Cancelling the parent cancels every descendant.
//   - Bounds. Children nest at most 3 deep and one answer starts at most
//     8 (docs/concepts.md, "Sub-agents"); calls past a bound are answered
//     with an error naming it.
//
// [Main] refuses a program whose sub-agent names an agent it was not
// given. The child appears in `keel runs --parent RUN` and `keel explain`
// tells its story on the parent.
func SubAgent(name, description, agent string, opts ...SubAgentOption) Tool {
	t := Tool{name: name}
	if err := agentdef.CheckName("tool", name); err != nil {
		t.err = err
		return t
	}
	if err := agentdef.CheckName("agent", agent); err != nil {
		t.err = fmt.Errorf("sub-agent tool %q: %w", name, err)
		return t
	}
	s := &subAgentSpec{agent: agent}
	for _, o := range opts {
		o(s)
	}
	if l := s.limits; l.MaxSteps < 0 || l.MaxToolCalls < 0 || l.MaxTokens < 0 || l.MaxSpendMicroUSD < 0 || l.Timeout < 0 {
		t.err = fmt.Errorf("sub-agent tool %q: limits must not be negative", name)
		return t
	}
	s.info = tool.Info{Name: name, Description: description, Schema: json.RawMessage(tool.DelegationSchema), Mode: run.ModeSafeReadonly}
	t.sub = s
	t.build = func(artifact.Store) tool.Tool { return subAgentTool{info: s.info, del: s.delegation(Limits{})} }
	return t
}

// SubAgentOption configures a [SubAgent].
type SubAgentOption func(*subAgentSpec)

// SubAgentLimits narrows the child's limits: a field set here caps the
// child's share of its parent's budget (and the child agent's own limits);
// a zero field leaves it. Limits can only narrow, never widen.
func SubAgentLimits(l Limits) SubAgentOption { return func(s *subAgentSpec) { s.limits = l } }

// InheritGrants runs the child in its parent's session, so confirm-once
// grants given there cover it too. Without it a child asks again.
func InheritGrants() SubAgentOption { return func(s *subAgentSpec) { s.inherit = true } }

type subAgentSpec struct {
	info    tool.Info
	agent   string
	limits  Limits
	inherit bool
}

// delegation is the harness's view of the sub-agent, its limits narrowed
// by the child agent's own.
func (s *subAgentSpec) delegation(child Limits) tool.Delegation {
	n := func(a, b int64) int64 {
		if a == 0 || (b > 0 && b < a) {
			return b
		}
		return a
	}
	timeout := time.Duration(n(int64(s.limits.Timeout), int64(child.Timeout)))
	return tool.Delegation{Agent: s.agent, Timeout: timeout, InheritGrants: s.inherit, Limits: run.Limits{
		MaxSteps: n(s.limits.MaxSteps, child.MaxSteps), MaxToolCalls: n(s.limits.MaxToolCalls, child.MaxToolCalls),
		MaxTokens: n(s.limits.MaxTokens, child.MaxTokens), MaxSpendMicroUSD: n(s.limits.MaxSpendMicroUSD, child.MaxSpendMicroUSD)}}
}

// subAgentTool is a SubAgent as the harness sees it.
type subAgentTool struct {
	info tool.Info
	del  tool.Delegation
}

var _ tool.Delegating = subAgentTool{}

func (t subAgentTool) Info() tool.Info             { return t.info }
func (t subAgentTool) Delegation() tool.Delegation { return t.del }
func (t subAgentTool) Run(context.Context, tool.Call) (tool.Result, error) {
	return tool.Result{}, errors.New("a sub-agent call starts a child run; it is never run as a function")
}

// resolveSubAgents checks that every sub-agent names an agent of the
// program, and narrows each by its child agent's limits.
func resolveSubAgents(agents []Agent) error {
	byName := map[string]Agent{}
	for _, a := range agents {
		byName[a.Name] = a
	}
	for ai, a := range agents {
		for ti, t := range a.Tools {
			if t.sub == nil {
				continue
			}
			child, ok := byName[t.sub.agent]
			if !ok {
				return fmt.Errorf("agent %q: sub-agent tool %q names agent %q, which this program does not have", a.Name, t.name, t.sub.agent)
			}
			info, del := t.sub.info, t.sub.delegation(child.Limits)
			agents[ai].Tools[ti].build = func(artifact.Store) tool.Tool { return subAgentTool{info: info, del: del} }
		}
	}
	return nil
}

// copyAgents copies agents and their tool lists, so resolving sub-agents
// changes nothing the caller holds.
func copyAgents(agents []Agent) []Agent {
	out := make([]Agent, len(agents))
	for i, a := range agents {
		a.Tools = append([]Tool(nil), a.Tools...)
		out[i] = a
	}
	return out
}
