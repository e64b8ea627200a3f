package harness

import (
	"context"
	"sync"

	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// toolbox is the agent's tools as a Step's calls run them: a tool.Judged
// tool (an MCP server's tools, whose terms can change while the worker
// lives) is judged once per Step, for the run. Calls running concurrently
// read it, hence the lock.
type toolbox struct {
	reg    *tool.Registry
	runID  string
	mu     sync.Mutex
	judged map[string]tool.Tool
}

// get is the named tool as this run's calls run it; ok is false for a
// tool the agent does not have.
func (b *toolbox) get(ctx context.Context, name string) (tool.Tool, bool) {
	t, ok := b.reg.Get(name)
	if !ok {
		return nil, false
	}
	return b.judge(ctx, t), true
}

// unjudged is the named tool as the agent declares it.
func (b *toolbox) unjudged(name string) (tool.Tool, bool) { return b.reg.Get(name) }

// delegating is the named tool when it starts sub-agents.
func (b *toolbox) delegating(name string) (tool.Delegating, bool) {
	t, _ := b.reg.Get(name)
	d, ok := t.(tool.Delegating)
	return d, ok
}

// forCall is the tool a call being planned runs: its arguments valid for
// the tool, the tool judged. A failed judgement is the call's error
// (tool_failed, never dispatched).
func (b *toolbox) forCall(ctx context.Context, tc model.ToolCall) (tool.Tool, error) {
	t, err := b.reg.Validate(tc.Name, tc.Args)
	if err != nil {
		return t, err
	}
	t = b.judge(ctx, t)
	if r, ok := t.(refusedTool); ok {
		return nil, r.err
	}
	return t, nil
}

// judge is t under the terms the run holds: t itself unless it is
// tool.Judged. A judgement that fails gives a tool that refuses every
// call with its error, and asks nobody: refusing sends nothing.
func (b *toolbox) judge(ctx context.Context, t tool.Tool) tool.Tool {
	j, ok := t.(tool.Judged)
	if !ok {
		return t
	}
	name := t.Info().Name
	b.mu.Lock()
	defer b.mu.Unlock()
	if got, ok := b.judged[name]; ok {
		return got
	}
	got, err := j.Judge(ctx, b.runID)
	if err != nil {
		info := t.Info()
		info.Mode = run.ModeSafeReadonly
		got = refusedTool{info: info, err: err}
	}
	if b.judged == nil {
		b.judged = map[string]tool.Tool{}
	}
	b.judged[name] = got
	return got
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
