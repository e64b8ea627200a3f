package harness

// Read-only calls: one alone, or several at once under reservations in
// the store, their progress reported as tool_progress events.

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// runReadonly runs read-only calls; more than one run concurrently, each
// holding a reservation in the store (a tool call and the tool's price) so
// that together they cannot pass a limit. Calls refused a reservation
// fail under a failing policy; under a pausing one they stay pending and
// run after the raise.
func runReadonly(ctx context.Context, e *env, tr *transcript, pl *plan, cur *cursor, pend *pending, group []run.PlanItem) (Decision, bool, error) {
	if len(group) == 1 {
		t, _ := e.tools.get(ctx, group[0].Tool)
		if limit, v := callOver(e, cur, pend, t); limit != "" {
			d, err := atLimit(ctx, e, tr, pl, cur, pend, limit, v)
			return d, true, err
		}
		pend.use(store.Amounts{ToolCalls: 1, SpendMicroUSD: price(t)})
		execReadonly(ctx, e, tr, cur, pend, group[0])
		return Decision{}, false, nil
	}
	if err := pend.flush(ctx, store.Commit{}); err != nil { // reservations must see what we used
		return Decision{}, true, err
	}
	outs := reserveAndRun(ctx, e, cur, pend, group)
	var refused tool.Tool
	for i, it := range group {
		o := outs[i]
		if !o.reserved {
			if errors.Is(o.err, store.ErrBudgetExceeded) {
				if refused == nil {
					refused = o.tool
				}
				if e.agent.OnLimit.Pause {
					continue // runs after the raise
				}
			}
			pend.event(run.Event{Type: run.EventToolFailed, PlanItemID: it.ID, Data: jsonObj("tool", it.Tool, "error", errString(o.err), "dispatched", false)})
			finishItem(pend, tr, it, run.PlanFailed, tool.Result{Content: "not run: " + errString(o.err)}, true)
			continue
		}
		a := store.Amounts{ToolCalls: 1, SpendMicroUSD: price(o.tool)}
		pend.release(a)
		pend.use(a)
		// The call's tool_started would land in this commit with its
		// result: the result carries the start and the duration instead.
		toolDone(tr, pend, it, o.res, o.err, toolSpan{start: o.started, end: o.done, concurrent: true})
	}
	if refused != nil {
		limit, v := callOver(e, cur, pend, refused)
		if limit == "" { // refused by the store under limits this worker had not seen
			limit, v = "max_tool_calls", e.run.Limits.MaxToolCalls
		}
		d, err := atLimit(ctx, e, tr, pl, cur, pend, limit, v)
		return d, true, err
	}
	return Decision{}, false, nil
}

// readonlyOutcome is one concurrent call's reservation and result.
type readonlyOutcome struct {
	tool     tool.Tool
	reserved bool
	res      tool.Result
	err      error
	started  time.Time
	done     time.Time
}

// reserveAndRun runs group's calls concurrently, each once the store
// reserved it a tool call and its price.
func reserveAndRun(ctx context.Context, e *env, cur *cursor, pend *pending, group []run.PlanItem) []readonlyOutcome {
	outs := make([]readonlyOutcome, len(group))
	var wg sync.WaitGroup
	for i, it := range group {
		t, _ := e.tools.get(ctx, it.Tool)
		outs[i].tool = t
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.opt.Store.Reserve(ctx, e.run.ID, store.Amounts{ToolCalls: 1, SpendMicroUSD: price(t)}); err != nil {
				outs[i].err = err
				return
			}
			outs[i].reserved = true
			outs[i].started = e.opt.Clock()
			outs[i].res, outs[i].err = invoke(ctx, e, cur, pend, it, true, nil)
			outs[i].done = e.opt.Clock()
		}()
	}
	wg.Wait()
	return outs
}

// toolSpan is when a call ran, for the tool_completed or tool_failed event
// that stands for its tool_started too.
type toolSpan struct {
	start, end time.Time
	concurrent bool
	// logged: the tool_started event was committed before the result (a
	// progress report flushed it), so the result need not carry the span.
	logged bool
}

func (sp toolSpan) micros() int64 {
	if sp.logged {
		return -1
	}
	return micros(sp.end.Sub(sp.start))
}

// execReadonly runs one read-only call. Its tool_started is held back:
// when nothing is committed before the result, it would land in the same
// commit as tool_completed and is left out; a progress report that
// commits first writes it ahead of itself (invoke).
func execReadonly(ctx context.Context, e *env, tr *transcript, cur *cursor, pend *pending, it run.PlanItem) {
	sp := &toolSpan{start: e.opt.Clock()}
	res, err := invoke(ctx, e, cur, pend, it, false, sp)
	sp.end = e.opt.Clock()
	toolDone(tr, pend, it, res, err, *sp)
}

// toolDone records a read-only call's result, or its error, and answers
// it.
func toolDone(tr *transcript, pend *pending, it run.PlanItem, res tool.Result, err error, sp toolSpan) {
	if err != nil {
		data := map[string]any{"tool": it.Tool, "error": err.Error(), "dispatched": true}
		if us := sp.micros(); us >= 0 {
			data["duration_us"] = us
		}
		if sp.concurrent {
			data["concurrent"] = true
		}
		pend.event(run.Event{Type: run.EventToolFailed, PlanItemID: it.ID, Data: mustJSON(data)})
		finishItem(pend, tr, it, run.PlanFailed, tool.Result{Content: "tool failed: " + err.Error()}, true)
		return
	}
	pend.event(run.Event{Type: run.EventToolCompleted, PlanItemID: it.ID, Data: toolDoneData(it.Tool, len(res.Content), sp.micros(), sp.concurrent)})
	finishItem(pend, tr, it, run.PlanCompleted, res, false)
}

// invoke runs a tool, forwarding progress as tool_progress events. A tool
// running alone has its progress committed under the lease with whatever
// the step has pending, so the log reads in order (tool_started before its
// progress); calls running concurrently commit progress on their own. Both
// go through the lease's token: a fenced worker cannot report progress.
// held, for a call running alone, is its tool_started held back: the first
// progress report commits it, ahead of itself.
func invoke(ctx context.Context, e *env, cur *cursor, pend *pending, it run.PlanItem, concurrent bool, held *toolSpan) (tool.Result, error) {
	t, _ := e.tools.get(ctx, it.Tool)
	var mu sync.Mutex
	lastPct := int64(-1)
	call := tool.Call{RunID: e.run.ID, PlanItemID: it.ID, CheckpointID: cur.checkpoint, Args: it.Args, Progress: func(done, total int64, note string) {
		if total <= 0 {
			return
		}
		pct := done * 100 / total
		mu.Lock()
		report := pct >= lastPct+10 || done == total
		if report {
			lastPct = pct
		}
		mu.Unlock()
		if !report {
			return
		}
		ev := run.Event{Type: run.EventToolProgress, PlanItemID: it.ID, Time: e.opt.Clock(),
			Data: e.red.bytes(jsonObj("tool", it.Tool, "done", done, "total", total, "note", note))}
		// Progress is advisory: a failure to record it does not fail the tool.
		var err error
		if concurrent {
			// Carrying nothing else: the other calls' goroutines own no
			// part of the pending records.
			err = pend.progress(ctx, ev)
		} else {
			mu.Lock()
			if held != nil && !held.logged {
				held.logged = true
				pend.event(run.Event{Type: run.EventToolStarted, PlanItemID: it.ID, Time: held.start, Data: jsonObj("tool", it.Tool)})
			}
			pend.event(ev)
			err = pend.flush(ctx, store.Commit{})
			mu.Unlock()
		}
		if err != nil {
			e.log.Warn("tool progress not recorded", "err", err)
		}
	}}
	// A new name, not ctx: the progress callback above captures ctx, and
	// reassigning it would move it to the heap on every call.
	tctx, sp := e.tel.startTool(ctx, it, false)
	res, err := runTool(tctx, e, t, it.Tool, call)
	e.tel.endTool(tctx, sp, res, err)
	return res, err
}
