package harness

import (
	"context"
	"sync"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// judgedTools holds the Step's judgements of its tool.Judged tools (an
// MCP server's tools, whose terms can change while the worker lives):
// each judged once per Step, for the run. Calls running concurrently
// read it, hence the lock.
type judgedTools struct {
	mu sync.Mutex
	m  map[string]tool.Tool
}

// toolFor is the named tool as this run's calls run it; ok is false for
// a tool the agent does not have.
func (s *step) toolFor(ctx context.Context, name string) (tool.Tool, bool) {
	t, ok := s.agent.Tools.Get(name)
	if !ok {
		return nil, false
	}
	return s.judge(ctx, t), true
}

// judge is t under the terms the run holds: t itself unless it is
// tool.Judged. A judgement that fails gives a tool that refuses every
// call with its error, and asks nobody: refusing sends nothing.
func (s *step) judge(ctx context.Context, t tool.Tool) tool.Tool {
	j, ok := t.(tool.Judged)
	if !ok {
		return t
	}
	name := t.Info().Name
	s.judged.mu.Lock()
	defer s.judged.mu.Unlock()
	if got, ok := s.judged.m[name]; ok {
		return got
	}
	got, err := j.Judge(ctx, s.run.ID)
	if err != nil {
		info := t.Info()
		info.Mode = run.ModeSafeReadonly
		got = refusedTool{info: info, err: err}
	}
	if s.judged.m == nil {
		s.judged.m = map[string]tool.Tool{}
	}
	s.judged.m[name] = got
	return got
}

// judgeCall is judge for a call being planned: a failed judgement is the
// call's error (tool_failed, never dispatched).
func (s *step) judgeCall(ctx context.Context, t tool.Tool) (tool.Tool, error) {
	t = s.judge(ctx, t)
	if r, ok := t.(refusedTool); ok {
		return nil, r.err
	}
	return t, nil
}

// refusedTool is a tool whose judgement failed: every call fails with
// the judgement's error, before anything is sent.
type refusedTool struct {
	info tool.Info
	err  error
}

func (r refusedTool) Info() tool.Info { return r.info }

func (r refusedTool) Run(context.Context, tool.Call) (tool.Result, error) {
	return tool.Result{}, r.err
}
