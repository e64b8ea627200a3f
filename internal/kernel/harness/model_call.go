package harness

// The model call of an iteration: its budget checks, the call, what a
// failure means, the answer recorded, and the end of a turn.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// callModel makes one model call and turns its answer into plan items, or
// ends the turn. stop is true when the Step must return d.
func callModel(ctx context.Context, e *env, tr *transcript, pl *plan, cur *cursor, pend *pending) (d Decision, stop bool, err error) {
	lim := e.run.Limits
	if lim.MaxSteps > 0 && cur.steps+pend.steps() >= lim.MaxSteps {
		d, err := atLimit(ctx, e, tr, pl, cur, pend, "max_steps", lim.MaxSteps)
		return d, true, err
	}
	msgs, omitted, omittedAsst := tr.request()
	req := model.Request{RunID: e.run.ID, System: e.agent.System, Messages: msgs, Tools: specs(e.agent.Tools), MaxTokens: e.agent.MaxTokens,
		Omitted: omitted, OmittedAssistant: omittedAsst}
	estimate := tr.estimate(req.System, req.MaxTokens)
	if d, stop, err := spendExceeded(ctx, e, tr, pl, cur, pend, estimate); stop {
		return d, stop, err
	}
	// model_call_started is written only when the call fails: a completed
	// call's started event would land in the same commit as its
	// model_call_completed, which carries the duration instead.
	startedAt := e.opt.Clock()
	cctx, csp := e.tel.startChat(ctx, req)
	resp, err := e.agent.Model.Generate(cctx, req)
	e.tel.endChat(cctx, csp, resp, err)
	if err != nil {
		pend.event(run.Event{Type: run.EventModelCallStarted, Time: startedAt, Data: jsonObj("messages", len(req.Messages), "estimated_tokens", estimate, "omitted_messages", req.Omitted)})
		return modelFailed(ctx, pend, err)
	}
	var renamed []renamedCall
	resp.ToolCalls, renamed = uniqueCallIDs(resp.ToolCalls, tr.messages())
	if len(renamed) > 0 {
		e.log.Warn("model answer with duplicate tool-call ids: renamed", "run_id", e.run.ID, "renamed", len(renamed))
	}
	modelAnswered(e, tr, pend, req, resp, startedAt, renamed)
	if len(resp.ToolCalls) == 0 {
		return endTurn(ctx, e, tr, cur, pend, resp.Text)
	}
	pend.setStatus(run.StatusRunning)
	planCalls(ctx, e, tr, pl, pend, resp.ToolCalls)
	return Decision{}, false, nil
}

// spendExceeded ends the run when the call would take it past its token
// limit (by the request's estimate) or it is at its spend limit.
func spendExceeded(ctx context.Context, e *env, tr *transcript, pl *plan, cur *cursor, pend *pending, estimate int64) (Decision, bool, error) {
	lim, u := e.run.Limits, cur.inUse(pend.used())
	if lim.MaxTokens > 0 && u.Tokens+estimate > lim.MaxTokens {
		d, err := atLimit(ctx, e, tr, pl, cur, pend, "max_tokens", lim.MaxTokens)
		return d, true, err
	}
	if lim.MaxSpendMicroUSD > 0 && u.SpendMicroUSD >= lim.MaxSpendMicroUSD {
		d, err := atLimit(ctx, e, tr, pl, cur, pend, "max_spend", lim.MaxSpendMicroUSD)
		return d, true, err
	}
	return Decision{}, false, nil
}

// modelFailed decides what a failed model call means: a durable wait on a
// rate limit, the run failed on a refusal retrying cannot fix, or a
// retryable Step.
func modelFailed(ctx context.Context, pend *pending, err error) (Decision, bool, error) {
	var rl *model.RateLimitedError
	if errors.As(err, &rl) {
		recordAttempts(pend, rl.Attempts)
		wait := int64(rl.RetryAfter.Seconds() + 0.999)
		if wait < 1 {
			wait = 1
		}
		pend.event(run.Event{Type: run.EventRateLimited, Data: jsonObj("retry_after_seconds", wait, "durable_wait", true)})
		if ferr := pend.flush(ctx, store.Commit{}); ferr != nil {
			return Decision{}, true, ferr
		}
		return Decision{Next: NextWait, WaitSeconds: wait}, true, nil
	}
	if ctx.Err() != nil {
		return Decision{}, true, ctx.Err()
	}
	var ce *model.CallError
	if errors.As(err, &ce) && ce.Permanent() {
		d, err := modelRefused(ctx, pend, ce)
		return d, true, err
	}
	pend.event(run.Event{Type: run.EventModelCallFailed, Data: jsonObj("error", err.Error())})
	if ferr := pend.flush(ctx, store.Commit{}); ferr != nil {
		return Decision{}, true, ferr
	}
	return Decision{}, true, &RetryableError{Err: fmt.Errorf("model call: %w", err)}
}

// modelAnswered records the answer: its usage, its event (with what the
// model said, for `keel record`, and the tool-call ids the harness made
// unique), and the assistant message.
func modelAnswered(e *env, tr *transcript, pend *pending, req model.Request, resp model.Response, startedAt time.Time, renamed []renamedCall) {
	recordAttempts(pend, resp.Attempts)
	pend.step()
	pend.use(store.Amounts{Tokens: resp.Usage.Total(), SpendMicroUSD: resp.CostMicroUSD})
	pend.event(run.Event{Type: run.EventModelCallCompleted, Data: mustJSON(callCompleted{
		Usage: resp.Usage, StopReason: resp.StopReason, ResponseID: resp.ResponseID, Model: resp.Model,
		CostMicroUSD: resp.CostMicroUSD, ToolCalls: len(resp.ToolCalls), RetriedAttempts: len(resp.Attempts), OmittedMessages: req.Omitted,
		DurationUS: micros(e.opt.Clock().Sub(startedAt)), RenamedCallIDs: renamed,
		// What the model answered, so that `keel record` can replay the
		// run's decisions: the text and each call's name and arguments
		// (arguments never hold secrets: they are shown to the model and
		// stored on the plan item already).
		Answer: answerJSON(resp, tr.refs())})})
	tr.add(model.Message{Role: model.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
}

// recordAttempts records the attempts the model client retried below the
// call, each as the event of its kind.
func recordAttempts(pend *pending, as []model.Attempt) {
	for _, a := range as {
		typ := run.EventModelCallFailed
		if a.Kind == "rate_limited" {
			typ = run.EventRateLimited
		}
		pend.event(run.Event{Type: typ, Data: mustJSON(map[string]any{"kind": a.Kind, "status": a.Status,
			"retry_after_seconds": a.RetryAfter.Seconds(), "error": a.Error, "retried": true})})
	}
}

// endTurn handles a model answer without tool calls: the next queued input
// starts a new turn, or the run completes.
func endTurn(ctx context.Context, e *env, tr *transcript, cur *cursor, pend *pending, text string) (Decision, bool, error) {
	pend.event(run.Event{Type: run.EventTurnCompleted, Data: jsonObj("output_chars", len(text))})
	if e.run.InputPolicy == run.InputQueue || e.run.InputPolicy == run.InputInterrupt {
		if started, err := takeInputs(ctx, e, tr, pend); err != nil || started {
			return Decision{}, false, err
		}
	}
	pend.setStatus(run.StatusCompleted)
	pend.setOutput(text)
	pend.releaseLease()
	pend.event(run.Event{Type: run.EventRunCompleted, Data: jsonObj("steps", cur.steps+pend.steps())})
	if err := pend.flush(ctx, store.Commit{}); err != nil {
		return Decision{}, true, err
	}
	return Decision{Next: NextDone}, true, nil
}

// specs are the tools a model is offered.
func specs(r *tool.Registry) []model.ToolSpec {
	var out []model.ToolSpec
	for _, n := range r.Names() {
		t, _ := r.Get(n)
		info := t.Info()
		out = append(out, model.ToolSpec{Name: info.Name, Description: info.Description, Schema: info.Schema})
	}
	return out
}
