// Driving one execution: its cursor, its steps, and the commit of each transition.

package states

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// execRun is an execution being driven by this process.
type execRun struct {
	rec    execRecord
	m      *Machine
	input  any
	cur    cursor
	poke   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	// pending holds the events of transitions taken in memory only (see
	// advance): the next durable commit writes them first.
	pending []newEvent
	// pendingOutcome: pending holds a task's outcome, which must be
	// durable before the next invocation (advance).
	pendingOutcome bool
	// taskHere is the token of the ecs:runTask task this process started
	// (see ProcessBoundTasks).
	taskHere string
}

// cursor is where an execution stands; it is persisted at every transition.
type cursor struct {
	State     string          `json:"state"`
	Input     json.RawMessage `json:"input"`
	EnteredMS int64           `json:"entered_ms"`
	Retries   []int           `json:"retries,omitempty"`
	RetryAt   int64           `json:"retry_at_ms,omitempty"`
	WaitUntil int64           `json:"wait_until_ms,omitempty"`
	Task      *taskCursor     `json:"task,omitempty"`
}

// taskCursor is the current attempt of a Task state.
type taskCursor struct {
	Token     string          `json:"token,omitempty"`
	Params    json.RawMessage `json:"params"`
	Deadline  int64           `json:"deadline_ms,omitempty"`
	Heartbeat int             `json:"heartbeat_s,omitempty"`
	Submitted bool            `json:"submitted,omitempty"`
}

func (e *Executor) launch(ctx context.Context, rec execRecord) error {
	m, err := e.machineFor(ctx, rec.DefHash)
	if err != nil {
		return err
	}
	var cur cursor
	if err := json.Unmarshal(rec.Cursor, &cur); err != nil {
		return fmt.Errorf("states: execution %s: cursor: %w", rec.ARN, err)
	}
	input, err := decodeJSON([]byte(rec.Input))
	if err != nil {
		return fmt.Errorf("states: execution %s: input: %w", rec.ARN, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errShutdown
	}
	if _, ok := e.runs[rec.ARN]; ok {
		return nil
	}
	x := &execRun{rec: rec, m: m, input: input, cur: cur, poke: make(chan struct{}, 1)}
	x.ctx, x.cancel = context.WithCancel(e.ctx)
	e.runs[rec.ARN] = x
	e.wg.Add(1)
	go e.drive(x)
	return nil
}

func (e *Executor) pokeRun(arn string) {
	e.mu.Lock()
	x := e.runs[arn]
	e.mu.Unlock()
	if x != nil {
		select {
		case x.poke <- struct{}{}:
		default:
		}
	}
}

func (e *Executor) drive(x *execRun) {
	defer e.wg.Done()
	defer func() {
		e.mu.Lock()
		delete(e.runs, x.rec.ARN)
		e.mu.Unlock()
		x.cancel()
	}()
	for {
		if x.ctx.Err() != nil {
			return
		}
		err := e.step(x)
		switch {
		case err == nil:
		case errors.Is(err, errFinished), errors.Is(err, errNotRunning), errors.Is(err, errHistoryLimit), errors.Is(err, errShutdown):
			return
		default:
			if x.ctx.Err() != nil {
				return
			}
			// A store failure: the persisted cursor is unchanged, so the
			// step is retried from it after a pause.
			e.log.Error("states: execution step failed; retrying", "execution", x.rec.ARN, "state", x.cur.State, "err", err)
			select {
			case <-time.After(time.Second):
			case <-x.ctx.Done():
				return
			}
		}
	}
}

func (e *Executor) now() time.Time { return e.clock.Now().UTC().Truncate(time.Millisecond) }

// commit persists a transition, after the pending ones, and on success
// makes next current.
func (e *Executor) commit(x *execRun, next cursor, events []newEvent, tok *tokenRow) error {
	b, err := json.Marshal(next)
	if err != nil {
		return err
	}
	if err := e.store.commit(x.ctx, x.rec.ARN, e.now(), commitReq{Cursor: b, Events: x.withPending(events), NewToken: tok}); err != nil {
		return err
	}
	x.pending, x.pendingOutcome = nil, false
	x.cur = next
	return nil
}

// advance takes a transition in memory only: its events wait in pending
// for the next commit, and a crash before that resumes from the last
// persisted cursor. Only a transition that the persisted cursor
// determines may be taken so — out of a Pass or a Choice state, or into
// an attempt of a task without a token — since running it again from
// there takes it again the same way. A task's outcome may wait too
// (outcome), but only while pure states follow it (Pass, Choice, Succeed,
// Fail): running again from the persisted cursor would invoke the task
// again, as a crash during the call does, so it is committed before
// anything that leaves the executor — the next invocation, a token, a
// wait, a retry. One commit then carries what were up to seven of them,
// under load the single writer's biggest saving.
func (e *Executor) advance(x *execRun, next cursor, events []newEvent, outcome bool) error {
	if len(x.pending)+len(events) > maxPending {
		// A loop of Pass and Choice states commits as it goes, so that
		// it is seen, and meets the history limit.
		return e.commit(x, next, events, nil)
	}
	x.pending = append(x.pending, events...)
	x.pendingOutcome = x.pendingOutcome || outcome
	x.cur = next
	return nil
}

// maxPending bounds the events that wait for a commit: a few transitions.
const maxPending = 24

func (x *execRun) withPending(events []newEvent) []newEvent {
	if len(x.pending) == 0 {
		return events
	}
	return append(slices.Clip(x.pending), events...)
}

func (e *Executor) finish(x *execRun, events []newEvent, f *finalState) error {
	if err := e.store.commit(x.ctx, x.rec.ARN, e.now(), commitReq{Events: x.withPending(events), Final: f}); err != nil {
		return err
	}
	x.pending, x.pendingOutcome = nil, false
	return errFinished
}

func stateEvent(st *State, suffix string, now time.Time, details map[string]any) newEvent {
	key := "stateEnteredEventDetails"
	if suffix == "Exited" {
		key = "stateExitedEventDetails"
	}
	return newEvent{Type: st.Type + "State" + suffix, TS: now, Details: map[string]any{key: details}}
}

func enteredEvent(st *State, input []byte, now time.Time) newEvent {
	return stateEvent(st, "Entered", now, map[string]any{"name": st.Name, "input": string(input), "inputDetails": map[string]any{"truncated": false}})
}

func exitedEvent(st *State, output []byte, now time.Time) newEvent {
	return stateEvent(st, "Exited", now, map[string]any{"name": st.Name, "output": string(output), "outputDetails": map[string]any{"truncated": false}})
}

// failExecution closes the execution as FAILED.
func (e *Executor) failExecution(x *execRun, pre []newEvent, name, cause string) error {
	ev := newEvent{Type: "ExecutionFailed", TS: e.now(), Details: map[string]any{"executionFailedEventDetails": map[string]any{"error": name, "cause": cause}}}
	return e.finish(x, append(pre, ev), &finalState{Status: StatusFailed, Error: name, Cause: cause, hasErrorCause: true})
}

// transition leaves st with output and enters next (or ends the execution
// when next is "").
func (e *Executor) transition(x *execRun, st *State, output any, next string, pre []newEvent) error {
	return e.transitionFrom(x, st, output, next, pre, false)
}

// transitionFrom is transition; stored says that st's outcome is already
// durable elsewhere — a task token's, in its row — so that running again
// from the persisted cursor finds the same outcome without invoking
// anything, and the transition may wait in memory like a Choice's.
func (e *Executor) transitionFrom(x *execRun, st *State, output any, next string, pre []newEvent, stored bool) error {
	now := e.now()
	out, err := json.Marshal(output)
	if err != nil {
		return e.failExecution(x, pre, ErrRuntime, err.Error())
	}
	if len(out) > maxPayload {
		return e.failExecution(x, pre, ErrDataLimitExceeded, fmt.Sprintf("state %q output is %d bytes, over the %d-byte limit", st.Name, len(out), maxPayload))
	}
	events := append(pre, exitedEvent(st, out, now))
	if next == "" {
		s := string(out)
		events = append(events, newEvent{Type: "ExecutionSucceeded", TS: now, Details: map[string]any{
			"executionSucceededEventDetails": map[string]any{"output": s, "outputDetails": map[string]any{"truncated": false}}}})
		return e.finish(x, events, &finalState{Status: StatusSucceeded, Output: &s})
	}
	ns := x.m.States[next]
	events = append(events, enteredEvent(ns, out, now))
	nc := cursor{State: next, Input: out, EnteredMS: now.UnixMilli()}
	switch {
	case st.Type == "Pass" || st.Type == "Choice" || stored:
		return e.advance(x, nc, events, false)
	case st.Type == "Task" && pureState(ns):
		return e.advance(x, nc, events, true)
	}
	return e.commit(x, nc, events, nil)
}

// pureState reports whether st runs without leaving the executor: no
// invocation, token, timer or retry of its own.
func pureState(st *State) bool {
	switch st.Type {
	case "Pass", "Choice", "Succeed", "Fail":
		return true
	}
	return false
}

func nextOf(st *State) string {
	if st.End {
		return ""
	}
	return st.Next
}

// contextObject is $$ for the current state.
func (e *Executor) contextObject(x *execRun, st *State, token string) any {
	retries := 0
	for _, n := range x.cur.Retries {
		retries += n
	}
	mname := x.rec.MachineARN[strings.LastIndex(x.rec.MachineARN, ":")+1:]
	c := map[string]any{
		"Execution": map[string]any{
			"Id": x.rec.ARN, "Input": x.input, "Name": x.rec.Name,
			"RoleArn":      fmt.Sprintf("arn:aws:iam::%s:role/keel-local", e.account),
			"StartTime":    x.rec.Start.UTC().Format(timeLayout),
			"RedriveCount": json.Number("0"),
		},
		"State": map[string]any{
			"EnteredTime": time.UnixMilli(x.cur.EnteredMS).UTC().Format(timeLayout),
			"Name":        st.Name,
			"RetryCount":  json.Number(fmt.Sprint(retries)),
		},
		"StateMachine": map[string]any{"Id": x.rec.MachineARN, "Name": mname},
	}
	if token != "" {
		c["Task"] = map[string]any{"Token": token}
	}
	return c
}

// step runs the current state until its next persisted transition.
func (e *Executor) step(x *execRun) error {
	st, ok := x.m.States[x.cur.State]
	if !ok {
		return e.failExecution(x, nil, ErrRuntime, fmt.Sprintf("no state %q", x.cur.State))
	}
	raw, err := decodeJSON(x.cur.Input)
	if err != nil {
		return e.failExecution(x, nil, ErrRuntime, fmt.Sprintf("state input: %v", err))
	}
	switch st.Type {
	case "Pass":
		eff, _, serr := effectiveInput(st, raw, e.contextObject(x, st, ""))
		if serr != nil {
			return e.failExecution(x, nil, serr.Name, serr.Cause)
		}
		result := eff
		if st.HasResult {
			result = st.Result
		}
		out, serr := stateOutput(st, raw, result, nil)
		if serr != nil {
			return e.failExecution(x, nil, serr.Name, serr.Cause)
		}
		return e.transition(x, st, out, nextOf(st), nil)
	case "Choice":
		in, err := applyPath(st.InputPath, raw)
		if err != nil {
			return e.failExecution(x, nil, ErrRuntime, "InputPath: "+err.Error())
		}
		next := st.Default
		for _, r := range st.Choices {
			ok, err := r.eval(in)
			if err != nil {
				return e.failExecution(x, nil, ErrRuntime, fmt.Sprintf("state %q: %v", st.Name, err))
			}
			if ok {
				next = r.next
				break
			}
		}
		if next == "" {
			return e.failExecution(x, nil, "States.NoChoiceMatched", fmt.Sprintf("no choice rule of %q matched and it has no Default", st.Name))
		}
		out, err := applyPath(st.OutputPath, raw)
		if err != nil {
			return e.failExecution(x, nil, ErrRuntime, "OutputPath: "+err.Error())
		}
		return e.transition(x, st, out, next, nil)
	case "Wait":
		return e.runWait(x, st, raw)
	case "Succeed":
		in, err := applyPath(st.InputPath, raw)
		if err == nil {
			in, err = applyPath(st.OutputPath, in)
		}
		if err != nil {
			return e.failExecution(x, nil, ErrRuntime, err.Error())
		}
		return e.transition(x, st, in, "", nil)
	case "Fail":
		name, cause := st.Error, st.Cause
		if st.ErrorPath != nil {
			if v, err := st.ErrorPath.Get(raw); err == nil {
				name, _ = v.(string)
			}
		}
		if st.CausePath != nil {
			if v, err := st.CausePath.Get(raw); err == nil {
				cause, _ = v.(string)
			}
		}
		return e.failExecution(x, nil, name, cause)
	case "Task":
		return e.runTask(x, st, raw)
	}
	return e.failExecution(x, nil, ErrRuntime, "unsupported state type "+st.Type)
}
