package harness

// The model call of an iteration: its budget checks, the call, what a
// failure means, the plan items of its answer, and the end of a turn.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// callModel makes one model call and turns its answer into plan items, or
// ends the turn. stop is true when the Step must return d.
func (s *step) callModel(ctx context.Context) (d Decision, stop bool, err error) {
	lim := s.run.Limits
	if lim.MaxSteps > 0 && s.cur.steps+s.pend.steps() >= lim.MaxSteps {
		d, err := s.atLimit(ctx, "max_steps", lim.MaxSteps)
		return d, true, err
	}
	msgs, omitted, omittedAsst := s.tr.request()
	req := model.Request{RunID: s.run.ID, System: s.agent.System, Messages: msgs, Tools: specs(s.agent.Tools), MaxTokens: s.agent.MaxTokens,
		Omitted: omitted, OmittedAssistant: omittedAsst}
	estimate := s.tr.estimate(req.System, req.MaxTokens)
	if d, stop, err := s.spendExceeded(ctx, estimate); stop {
		return d, stop, err
	}
	// model_call_started is written only when the call fails: a completed
	// call's started event would land in the same commit as its
	// model_call_completed, which carries the duration instead.
	startedAt := s.opt.Clock()
	cctx, csp := s.tel.startChat(ctx, req)
	resp, err := s.agent.Model.Generate(cctx, req)
	s.tel.endChat(cctx, csp, resp, err)
	if err != nil {
		s.pend.event(run.Event{Type: run.EventModelCallStarted, Time: startedAt, Data: jsonObj("messages", len(req.Messages), "estimated_tokens", estimate, "omitted_messages", req.Omitted)})
		return s.modelFailed(ctx, err)
	}
	var renamed []renamedCall
	resp.ToolCalls, renamed = uniqueCallIDs(resp.ToolCalls, s.tr.messages())
	if len(renamed) > 0 {
		s.log.Warn("model answer with duplicate tool-call ids: renamed", "run_id", s.run.ID, "renamed", len(renamed))
	}
	s.modelAnswered(req, resp, startedAt, renamed)
	if len(resp.ToolCalls) == 0 {
		return s.endTurn(ctx, resp.Text)
	}
	s.pend.setStatus(run.StatusRunning)
	s.planCalls(ctx, resp.ToolCalls)
	return Decision{}, false, nil
}

// spendExceeded ends the run when the call would take it past its token
// limit (by the request's estimate) or it is at its spend limit.
func (s *step) spendExceeded(ctx context.Context, estimate int64) (Decision, bool, error) {
	lim, u := s.run.Limits, s.cur.inUse(s.pend.used())
	if lim.MaxTokens > 0 && u.Tokens+estimate > lim.MaxTokens {
		d, err := s.atLimit(ctx, "max_tokens", lim.MaxTokens)
		return d, true, err
	}
	if lim.MaxSpendMicroUSD > 0 && u.SpendMicroUSD >= lim.MaxSpendMicroUSD {
		d, err := s.atLimit(ctx, "max_spend", lim.MaxSpendMicroUSD)
		return d, true, err
	}
	return Decision{}, false, nil
}

// modelFailed decides what a failed model call means: a durable wait on a
// rate limit, the run failed on a refusal retrying cannot fix, or a
// retryable Step.
func (s *step) modelFailed(ctx context.Context, err error) (Decision, bool, error) {
	var rl *model.RateLimitedError
	if errors.As(err, &rl) {
		s.recordAttempts(rl.Attempts)
		wait := int64(rl.RetryAfter.Seconds() + 0.999)
		if wait < 1 {
			wait = 1
		}
		s.pend.event(run.Event{Type: run.EventRateLimited, Data: jsonObj("retry_after_seconds", wait, "durable_wait", true)})
		if ferr := s.pend.flush(ctx, store.Commit{}); ferr != nil {
			return Decision{}, true, ferr
		}
		return Decision{Next: NextWait, WaitSeconds: wait}, true, nil
	}
	if ctx.Err() != nil {
		return Decision{}, true, ctx.Err()
	}
	var ce *model.CallError
	if errors.As(err, &ce) && ce.Permanent() {
		d, err := s.modelRefused(ctx, ce)
		return d, true, err
	}
	s.pend.event(run.Event{Type: run.EventModelCallFailed, Data: jsonObj("error", err.Error())})
	if ferr := s.pend.flush(ctx, store.Commit{}); ferr != nil {
		return Decision{}, true, ferr
	}
	return Decision{}, true, &RetryableError{Err: fmt.Errorf("model call: %w", err)}
}

// modelAnswered records the answer: its usage, its event (with what the
// model said, for `keel record`, and the tool-call ids the harness made
// unique), and the assistant message.
func (s *step) modelAnswered(req model.Request, resp model.Response, startedAt time.Time, renamed []renamedCall) {
	s.recordAttempts(resp.Attempts)
	s.pend.step()
	s.pend.use(store.Amounts{Tokens: resp.Usage.Total(), SpendMicroUSD: resp.CostMicroUSD})
	s.pend.event(run.Event{Type: run.EventModelCallCompleted, Data: mustJSON(callCompleted{
		Usage: resp.Usage, StopReason: resp.StopReason, ResponseID: resp.ResponseID, Model: resp.Model,
		CostMicroUSD: resp.CostMicroUSD, ToolCalls: len(resp.ToolCalls), RetriedAttempts: len(resp.Attempts), OmittedMessages: req.Omitted,
		DurationUS: micros(s.opt.Clock().Sub(startedAt)), RenamedCallIDs: renamed,
		// What the model answered, so that `keel record` can replay the
		// run's decisions: the text and each call's name and arguments
		// (arguments never hold secrets: they are shown to the model and
		// stored on the plan item already).
		Answer: answerJSON(resp, s.tr.refs())})})
	s.tr.add(model.Message{Role: model.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
}

// planCalls turns the answer's tool calls into pending plan items; a call
// with invalid arguments is answered at once and never dispatched.
func (s *step) planCalls(ctx context.Context, calls []model.ToolCall) {
	for _, tc := range calls {
		it := s.pl.newItem(s.run.ID, tc)
		t, verr := s.tools.forCall(ctx, tc)
		hash, herr := run.ArgsHash(tc.Args)
		if verr == nil && herr != nil {
			// Arguments the hash cannot bind exactly (a number beyond a
			// double) are refused like invalid ones: an approval of them could
			// cover another action.
			verr = fmt.Errorf("%w for %s: %v", tool.ErrInvalidArgs, tc.Name, herr)
		}
		it.ArgsHash = hash
		if verr != nil {
			// Never dispatched: the model is told what was wrong.
			it.Mode = run.ModeSafeReadonly
			if herr != nil {
				it.Args, it.ArgsHash = invalidArgs(tc.Args), ""
			}
			s.pend.event(run.Event{Type: run.EventToolFailed, PlanItemID: it.ID, Data: jsonObj("tool", tc.Name, "error", verr.Error(), "dispatched", false)})
			finishItem(&s.pend, &s.tr, it, run.PlanFailed, tool.Result{Content: verr.Error()}, true)
			continue
		}
		it.Mode = t.Info().Mode
		s.pend.item(it)
	}
}

func (s *step) recordAttempts(as []model.Attempt) {
	for _, a := range as {
		typ := run.EventModelCallFailed
		if a.Kind == "rate_limited" {
			typ = run.EventRateLimited
		}
		s.pend.event(run.Event{Type: typ, Data: mustJSON(map[string]any{"kind": a.Kind, "status": a.Status,
			"retry_after_seconds": a.RetryAfter.Seconds(), "error": a.Error, "retried": true})})
	}
}

// endTurn handles a model answer without tool calls: the next queued input
// starts a new turn, or the run completes.
func (s *step) endTurn(ctx context.Context, text string) (Decision, bool, error) {
	s.pend.event(run.Event{Type: run.EventTurnCompleted, Data: jsonObj("output_chars", len(text))})
	if s.run.InputPolicy == run.InputQueue || s.run.InputPolicy == run.InputInterrupt {
		if started, err := s.takeInputs(ctx); err != nil || started {
			return Decision{}, false, err
		}
	}
	out := text
	s.pend.setStatus(run.StatusCompleted)
	s.pend.setOutput(out)
	s.pend.releaseLease()
	s.pend.event(run.Event{Type: run.EventRunCompleted, Data: jsonObj("steps", s.cur.steps+s.pend.steps())})
	if err := s.pend.flush(ctx, store.Commit{}); err != nil {
		return Decision{}, true, err
	}
	return Decision{Next: NextDone}, true, nil
}

// inputCommitReserve is what the commit that consumes a batch of inputs
// writes besides the pending records and the inputs: the run row, the
// checkpoint, checkpoint_written and turn_started, plus a margin.
const inputCommitReserve = 8

// takeInputs starts a new turn from queued input, if any. It takes the
// oldest inputs in a bounded batch — as many as the commit that consumes
// them can hold under store.MaxItemsPerCommit, and at most store.MaxText
// bytes of text (the first input always) — so that any number of queued
// inputs never makes a commit the store refuses; the rest start the
// following turns, in order.
func (s *step) takeInputs(ctx context.Context) (bool, error) {
	inputs, err := s.opt.Store.ListInputs(ctx, s.run.ID, true)
	if err != nil {
		return false, &RetryableError{Err: err}
	}
	if len(inputs) == 0 {
		return false, nil
	}
	room := s.inputRoom()
	if room < 1 {
		// The pending records leave no room: commit them first.
		if err := s.pend.flush(ctx, store.Commit{}); err != nil {
			return false, err
		}
		room = s.inputRoom()
	}
	var texts, ids []string
	size := 0
	for _, in := range inputs {
		if len(ids) >= room || (len(ids) > 0 && size+len(in.Text) > store.MaxText) {
			break
		}
		size += len(in.Text)
		texts = append(texts, in.Text)
		ids = append(ids, in.ID)
	}
	s.pend.consume(ids)
	s.tr.add(model.Message{Role: model.RoleUser, Text: strings.Join(texts, "\n\n")})
	s.pend.event(run.Event{Type: run.EventTurnStarted, Data: mustJSON(map[string]any{"inputs": ids})})
	return true, nil
}

// inputRoom is how many inputs the next commit can still consume.
func (s *step) inputRoom() int {
	return s.pend.room(inputCommitReserve)
}
