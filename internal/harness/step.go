package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/model"
	"github.com/keelrun/keel/internal/run"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/tool"
)

// step is the state of one Step call. It is thrown away when the Step
// returns: the next Step rebuilds it from the store.
type step struct {
	h        *Harness
	agent    Agent
	run      run.Run
	token    int64
	deadline time.Time
	log      *slog.Logger
	secrets  []string // declared by the agent's tools: never recorded

	msgs      []model.Message // the transcript: its first message and the tail the context window needs (transcript.go)
	committed int             // msgs[:committed] are durable
	view      transcriptView  // of msgs, for model calls
	cpID      string
	cpSeq     int64
	items     map[string]run.PlanItem // by model call id, this run
	inherited map[string]run.PlanItem // by model call id, runs this one forked from
	nextOrder int64
	status    run.Status

	pend pending
	// fresh holds the run's signals as the last commit left them, when the
	// store reports them (signalCommitter): the next iteration uses them
	// instead of reading its own.
	fresh *store.RunSignals
}

// pending is what the next commit will write.
type pending struct {
	events   []run.Event
	items    map[string]run.PlanItem // by id
	itemIDs  []string
	used     store.Amounts
	released store.Amounts
	steps    int64
	consume  []string
	patch    store.RunPatch
}

func (p *pending) empty() bool {
	return len(p.events) == 0 && len(p.items) == 0 && p.steps == 0 && len(p.consume) == 0 &&
		p.patch == (store.RunPatch{}) && p.used == (store.Amounts{}) && p.released == (store.Amounts{})
}

// closing reports the event types that end a turn or a run.
func closing(t run.EventType) bool {
	switch t {
	case run.EventTurnCompleted, run.EventRunCompleted, run.EventRunFailed, run.EventRunCancelled, run.EventRunNeedsHuman:
		return true
	}
	return false
}

type checkpointState struct {
	Messages []model.Message `json:"messages"`
}

func (s *step) addEvent(e run.Event) {
	if e.Time.IsZero() {
		e.Time = s.h.opt.Clock()
	}
	e.Data = s.redactBytes(e.Data)
	s.pend.events = append(s.pend.events, e)
}

func (s *step) putItem(it run.PlanItem) {
	it.UpdatedAt = s.h.opt.Clock()
	it.Result = s.redactBytes(it.Result)
	if s.pend.items == nil {
		s.pend.items = map[string]run.PlanItem{}
	}
	if _, ok := s.pend.items[it.ID]; !ok {
		s.pend.itemIDs = append(s.pend.itemIDs, it.ID)
	}
	s.pend.items[it.ID] = it
	s.items[it.CallID] = it
}

func (s *step) setStatus(st run.Status) {
	if s.status == st {
		return
	}
	s.status = st
	s.pend.patch.Status = st
}

// loop runs iterations until a decision.
func (s *step) loop(ctx context.Context) (Decision, error) {
	if d, stop, err := s.reconcileAll(ctx); err != nil || stop {
		return d, err
	}
	for {
		// One cheap read per iteration sees a cancel request or a lost
		// lease; budget reservations need no refresh, since only this
		// step's own concurrent calls reserve while it holds the lease.
		sig, err := s.signals(ctx)
		if err != nil {
			return Decision{}, &RetryableError{Err: err}
		}
		if sig.LeaseToken != s.token {
			return Decision{}, &FencedError{RunID: s.run.ID}
		}
		s.run.CancelRequested = sig.CancelRequested
		if s.run.CancelRequested {
			return s.cancel(ctx)
		}
		if dl := s.run.Limits.Deadline; !dl.IsZero() && !s.h.opt.Clock().Before(dl) {
			return s.exceeded(ctx, "deadline", dl.Format("2006-01-02T15:04:05Z07:00"))
		}
		if len(s.openCalls()) == 0 {
			d, stop, err := s.callModel(ctx)
			if err != nil || stop {
				return d, err
			}
		}
		if open := s.openCalls(); len(open) > 0 {
			d, stop, err := s.runCalls(ctx, open)
			if err != nil || stop {
				return d, err
			}
		}
		if err := s.flush(ctx, store.Commit{}); err != nil {
			return Decision{}, err
		}
		s.trimTranscript(false)
		if !s.h.opt.Clock().Before(s.deadline) {
			return Decision{Next: NextContinue}, nil
		}
	}
}

// openCalls returns the tool calls of the last assistant message that have
// no result in the transcript yet, in order.
func (s *step) openCalls() []model.ToolCall {
	last := -1
	for i := len(s.msgs) - 1; i >= 0; i-- {
		if s.msgs[i].Role == model.RoleAssistant {
			last = i
			break
		}
	}
	if last < 0 {
		return nil
	}
	answered := map[string]bool{}
	for _, m := range s.msgs[last+1:] {
		if m.Role == model.RoleUser {
			return nil
		}
		for _, tr := range m.ToolResults {
			answered[tr.CallID] = true
		}
	}
	var open []model.ToolCall
	for _, tc := range s.msgs[last].ToolCalls {
		if !answered[tc.ID] {
			open = append(open, tc)
		}
	}
	return open
}

func (s *step) answer(callID string, res tool.Result, isErr bool) {
	res = s.redactResult(res)
	s.msgs = append(s.msgs, model.Message{Role: model.RoleTool, ToolResults: []model.ToolResult{{CallID: callID, Content: res.Content, IsError: isErr}}})
}

// recorded is the tool result a plan item holds.
type recorded struct {
	Content string          `json:"content"`
	Data    json.RawMessage `json:"data,omitempty"`
	IsError bool            `json:"is_error,omitempty"`
}

func recordOf(res tool.Result, isErr bool) json.RawMessage {
	b, _ := json.Marshal(recorded{Content: res.Content, Data: res.Data, IsError: isErr})
	return b
}

func (s *step) finishItem(it run.PlanItem, st run.PlanStatus, res tool.Result, isErr bool) {
	it.Status = st
	it.Result = recordOf(res, isErr)
	s.putItem(it)
	s.answer(it.CallID, res, isErr)
}

// callModel makes one model call and turns its answer into plan items, or
// ends the turn. stop is true when the Step must return d.
func (s *step) callModel(ctx context.Context) (d Decision, stop bool, err error) {
	lim := s.run.Limits
	b := s.run.Budget
	if lim.MaxSteps > 0 && s.run.StepCount+s.pend.steps >= lim.MaxSteps {
		d, err := s.exceeded(ctx, "max_steps", lim.MaxSteps)
		return d, true, err
	}
	req := s.modelRequest()
	estimate := s.view.estimate(req.System, req.MaxTokens)
	if lim.MaxTokens > 0 && b.TokensUsed+b.TokensReserved+s.pend.used.Tokens+estimate > lim.MaxTokens {
		d, err := s.exceeded(ctx, "max_tokens", lim.MaxTokens)
		return d, true, err
	}
	if lim.MaxSpendMicroUSD > 0 && b.SpendUsedMicroUSD+b.SpendReservedMicroUSD+s.pend.used.SpendMicroUSD >= lim.MaxSpendMicroUSD {
		d, err := s.exceeded(ctx, "max_spend", lim.MaxSpendMicroUSD)
		return d, true, err
	}
	// model_call_started is written only when the call fails: a completed
	// call's started event would land in the same commit as its
	// model_call_completed, which carries the duration instead.
	startedAt := s.h.opt.Clock()
	cctx, csp := s.startChat(ctx, req)
	resp, err := s.agent.Model.Generate(cctx, req)
	s.endChat(cctx, csp, resp, err)
	if err != nil {
		s.addEvent(run.Event{Type: run.EventModelCallStarted, Time: startedAt, Data: jsonObj("messages", len(req.Messages), "estimated_tokens", estimate, "omitted_messages", req.Omitted)})
		var rl *model.RateLimitedError
		if errors.As(err, &rl) {
			s.recordAttempts(rl.Attempts)
			wait := int64(rl.RetryAfter.Seconds() + 0.999)
			if wait < 1 {
				wait = 1
			}
			s.addEvent(run.Event{Type: run.EventRateLimited, Data: jsonObj("retry_after_seconds", wait, "durable_wait", true)})
			if ferr := s.flush(ctx, store.Commit{}); ferr != nil {
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
		s.addEvent(run.Event{Type: run.EventModelCallFailed, Data: jsonObj("error", err.Error())})
		if ferr := s.flush(ctx, store.Commit{}); ferr != nil {
			return Decision{}, true, ferr
		}
		return Decision{}, true, &RetryableError{Err: fmt.Errorf("model call: %w", err)}
	}
	s.recordAttempts(resp.Attempts)
	s.pend.steps++
	s.pend.used.Tokens += resp.Usage.Total()
	s.pend.used.SpendMicroUSD += resp.CostMicroUSD
	s.addEvent(run.Event{Type: run.EventModelCallCompleted, Data: mustJSON(callCompleted{
		Usage: resp.Usage, StopReason: resp.StopReason, ResponseID: resp.ResponseID, Model: resp.Model,
		CostMicroUSD: resp.CostMicroUSD, ToolCalls: len(resp.ToolCalls), RetriedAttempts: len(resp.Attempts), OmittedMessages: req.Omitted,
		DurationUS: micros(s.h.opt.Clock().Sub(startedAt)),
		// What the model answered, so that `keel record` can replay the
		// run's decisions: the text and each call's name and arguments
		// (arguments never hold secrets: they are shown to the model and
		// stored on the plan item already).
		Answer: answerJSON(resp, s.view.refs(s.msgs))})})
	s.msgs = append(s.msgs, model.Message{Role: model.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
	if len(resp.ToolCalls) == 0 {
		return s.endTurn(ctx, resp.Text)
	}
	s.setStatus(run.StatusRunning)
	for _, tc := range resp.ToolCalls {
		it := run.PlanItem{ID: run.NewID("item"), RunID: s.run.ID, Order: s.nextOrder, Tool: tc.Name, Args: tc.Args, CallID: tc.ID, Status: run.PlanPending}
		s.nextOrder++
		t, verr := s.agent.Tools.Validate(tc.Name, tc.Args)
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
			s.addEvent(run.Event{Type: run.EventToolFailed, PlanItemID: it.ID, Data: jsonObj("tool", tc.Name, "error", verr.Error(), "dispatched", false)})
			s.finishItem(it, run.PlanFailed, tool.Result{Content: verr.Error()}, true)
			continue
		}
		it.Mode = t.Info().Mode
		s.putItem(it)
	}
	return Decision{}, false, nil
}

func (s *step) recordAttempts(as []model.Attempt) {
	for _, a := range as {
		typ := run.EventModelCallFailed
		if a.Kind == "rate_limited" {
			typ = run.EventRateLimited
		}
		s.addEvent(run.Event{Type: typ, Data: mustJSON(map[string]any{"kind": a.Kind, "status": a.Status,
			"retry_after_seconds": a.RetryAfter.Seconds(), "error": a.Error, "retried": true})})
	}
}

// endTurn handles a model answer without tool calls: the next queued input
// starts a new turn, or the run completes.
func (s *step) endTurn(ctx context.Context, text string) (Decision, bool, error) {
	s.addEvent(run.Event{Type: run.EventTurnCompleted, Data: jsonObj("output_chars", len(text))})
	if s.run.InputPolicy == run.InputQueue || s.run.InputPolicy == run.InputInterrupt {
		if started, err := s.takeInputs(ctx); err != nil || started {
			return Decision{}, false, err
		}
	}
	out := text
	s.setStatus(run.StatusCompleted)
	s.pend.patch.Output = &out
	s.pend.patch.ReleaseLease = true
	s.addEvent(run.Event{Type: run.EventRunCompleted, Data: jsonObj("steps", s.run.StepCount+s.pend.steps)})
	if err := s.flush(ctx, store.Commit{}); err != nil {
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
	inputs, err := s.h.opt.Store.ListInputs(ctx, s.run.ID, true)
	if err != nil {
		return false, &RetryableError{Err: err}
	}
	if len(inputs) == 0 {
		return false, nil
	}
	room := s.inputRoom()
	if room < 1 {
		// The pending records leave no room: commit them first.
		if err := s.flush(ctx, store.Commit{}); err != nil {
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
	s.pend.consume = append(s.pend.consume, ids...)
	s.msgs = append(s.msgs, model.Message{Role: model.RoleUser, Text: strings.Join(texts, "\n\n")})
	s.addEvent(run.Event{Type: run.EventTurnStarted, Data: mustJSON(map[string]any{"inputs": ids})})
	return true, nil
}

// inputRoom is how many inputs the next commit can still consume.
func (s *step) inputRoom() int {
	return store.MaxItemsPerCommit - inputCommitReserve - len(s.pend.events) - len(s.pend.itemIDs) - len(s.pend.consume)
}

// runCalls works through the open tool calls in order.
func (s *step) runCalls(ctx context.Context, open []model.ToolCall) (Decision, bool, error) {
	for i := 0; i < len(open); i++ {
		tc := open[i]
		it, ok := s.items[tc.ID]
		if !ok {
			if p, ok := s.inherited[tc.ID]; ok && len(p.Result) > 0 {
				// A fork: reuse the recorded result, never repeat the effect.
				rec, err := decodeRecorded(p)
				if err != nil {
					return Decision{}, true, err
				}
				s.answer(tc.ID, tool.Result{Content: rec.Content, Data: rec.Data}, rec.IsError)
				continue
			}
			it = run.PlanItem{ID: run.NewID("item"), RunID: s.run.ID, Order: s.nextOrder, Tool: tc.Name, Args: tc.Args, CallID: tc.ID, Status: run.PlanPending}
			s.nextOrder++
			t, err := s.agent.Tools.Validate(tc.Name, tc.Args)
			if err == nil {
				if it.ArgsHash, err = run.ArgsHash(tc.Args); err != nil {
					err = fmt.Errorf("%w for %s: %v", tool.ErrInvalidArgs, tc.Name, err)
				}
			}
			if err != nil {
				it.Mode = run.ModeSafeReadonly
				it.Args = invalidArgs(tc.Args)
				s.finishItem(it, run.PlanFailed, tool.Result{Content: err.Error()}, true)
				continue
			}
			it.Mode = t.Info().Mode
		}
		switch it.Status {
		case run.PlanCompleted, run.PlanFailed, run.PlanDenied, run.PlanSkipped, run.PlanNeedsHuman:
			rec, err := decodeRecorded(it)
			if err != nil {
				return Decision{}, true, err
			}
			s.answer(tc.ID, tool.Result{Content: rec.Content, Data: rec.Data}, rec.IsError)
			continue
		}
		t, _ := s.agent.Tools.Get(it.Tool)
		if t == nil {
			s.finishItem(it, run.PlanFailed, tool.Result{Content: "unknown tool " + it.Tool}, true)
			continue
		}
		allowed, d, stop, err := s.permit(ctx, it, t)
		if err != nil || stop {
			return d, stop, err
		}
		if !allowed {
			continue
		}
		if t.Info().Long && s.h.opt.CanSpill {
			s.addEvent(run.Event{Type: run.EventRunSpilled, PlanItemID: it.ID, Data: jsonObj("tool", it.Tool)})
			if err := s.flush(ctx, store.Commit{}); err != nil {
				return Decision{}, true, err
			}
			return Decision{Next: NextSpill}, true, nil
		}
		{
			// Cancellation stops new calls: a cancel that arrived during
			// the model call or between the calls of one answer is seen here.
			sig, err := s.h.opt.Store.RunSignals(ctx, s.run.ID)
			if err != nil {
				return Decision{}, true, &RetryableError{Err: err}
			}
			if sig.CancelRequested {
				s.run.CancelRequested = true
				d, err := s.cancel(ctx)
				return d, true, err
			}
		}
		if eff, ok := t.(tool.Effectful); ok {
			tctx, tsp := s.startTool(ctx, it, true)
			d, stop, err := s.runEffect(tctx, it, s.guardEffect(eff))
			s.endEffect(tctx, tsp, it.CallID, err)
			if err != nil || stop {
				return d, stop, err
			}
		} else {
			group := []run.PlanItem{it}
			// Under the interrupt policy calls run one by one, so new input
			// can stop the turn between them.
			for j := i + 1; j < len(open) && s.run.InputPolicy != run.InputInterrupt; j++ {
				nx, ok := s.items[open[j].ID]
				if !ok || nx.Status != run.PlanPending || nx.Mode != run.ModeSafeReadonly {
					break
				}
				nt, _ := s.agent.Tools.Get(nx.Tool)
				if _, eff := nt.(tool.Effectful); eff || nt == nil || (nt.Info().Long && s.h.opt.CanSpill) {
					break
				}
				group = append(group, nx)
			}
			if d, stop, err := s.runReadonly(ctx, group); err != nil || stop {
				return d, stop, err
			}
			i += len(group) - 1
		}
		if s.run.InputPolicy == run.InputInterrupt && i < len(open)-1 {
			started, err := s.interrupt(ctx, open[i+1:])
			if err != nil {
				return Decision{}, true, err
			}
			if started {
				return Decision{}, false, nil
			}
		}
	}
	return Decision{}, false, nil
}

// interrupt ends the current turn after a tool when input is waiting.
func (s *step) interrupt(ctx context.Context, rest []model.ToolCall) (bool, error) {
	inputs, err := s.h.opt.Store.ListInputs(ctx, s.run.ID, true)
	if err != nil {
		return false, &RetryableError{Err: err}
	}
	if len(inputs) == 0 {
		return false, nil
	}
	for _, tc := range rest {
		it, ok := s.items[tc.ID]
		if !ok {
			continue
		}
		s.finishItem(it, run.PlanSkipped, tool.Result{Content: "skipped: the user sent new input"}, true)
	}
	s.addEvent(run.Event{Type: run.EventTurnCompleted, Data: jsonObj("interrupted", true)})
	return s.takeInputs(ctx)
}
