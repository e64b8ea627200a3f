package states

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
)

// A Task state: its attempts, the integration it invokes, the callback
// token it may wait for, and how it ends.

func newToken() string {
	var b [48]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func validToken(t string) bool {
	b, err := base64.RawURLEncoding.DecodeString(t)
	return err == nil && len(b) == 48
}

func (e *Executor) secondsFrom(st *State, fixed int, p *Path, in any, field string) (int, *StateError) {
	if p == nil {
		return fixed, nil
	}
	v, err := p.Get(in)
	n, ierr := toInt(v)
	if err != nil || ierr != nil || n <= 0 || n > maxTimeoutSeconds {
		return 0, &StateError{Name: ErrRuntime, Cause: fmt.Sprintf("state %q: %s %s must select a positive integer", st.Name, field, p.Raw)}
	}
	return int(n), nil
}

func (e *Executor) runTask(x *execRun, st *State, raw any) error {
	typ, res := st.Resource.resourceNames()
	if x.cur.RetryAt > 0 {
		if err := e.sleepUntil(x, time.UnixMilli(x.cur.RetryAt)); err != nil {
			return err
		}
	}
	if x.cur.Task == nil {
		if stop, err := e.scheduleTask(x, st, raw, typ, res); stop {
			return err
		}
	}
	tc := x.cur.Task
	if !tc.Submitted {
		result, serr, err := e.invoke(x, st, tc)
		if err != nil {
			return err
		}
		if serr != nil {
			return e.taskFailed(x, st, raw, serr, nil)
		}
		if !st.Resource.waitsForToken() {
			return e.taskSucceeded(x, st, raw, result, false)
		}
		x.taskHere = tc.Token
		out, _ := json.Marshal(result)
		next := x.cur
		ntc := *tc
		ntc.Submitted = true
		next.Task = &ntc
		ev := newEvent{Type: "TaskSubmitted", TS: e.now(), Details: map[string]any{"taskSubmittedEventDetails": map[string]any{
			"resourceType": typ, "resource": res, "output": string(out), "outputDetails": map[string]any{"truncated": false}}}}
		if err := e.commit(x, next, []newEvent{ev}, nil); err != nil {
			return err
		}
		tc = x.cur.Task
	}
	result, serr, err := e.awaitToken(x, st, tc)
	if err != nil {
		return err
	}
	if serr != nil {
		return e.taskFailed(x, st, raw, serr, nil)
	}
	// The outcome came from the token's row, where it is durable already.
	return e.taskSucceeded(x, st, raw, result, true)
}

// scheduleTask starts a task attempt: its input, timeouts and token, and
// the TaskScheduled/TaskStarted events, made durable before the call when
// the call must find them after a crash. stop is true when runTask must
// return err (the state failed or the commit did); apart from runTask so
// that runTask reads as the attempt's three phases.
func (e *Executor) scheduleTask(x *execRun, st *State, raw any, typ, res string) (stop bool, err error) {
	token := ""
	if st.Resource.waitsForToken() {
		token = newToken()
	}
	eff, in, serr := effectiveInput(st, raw, e.contextObject(x, st, token))
	if serr != nil {
		return true, e.taskFailed(x, st, raw, serr, nil)
	}
	timeout, serr := e.secondsFrom(st, st.TimeoutSeconds, st.TimeoutSecondsPath, in, "TimeoutSecondsPath")
	if serr != nil {
		return true, e.failExecution(x, nil, serr.Name, serr.Cause)
	}
	hb, serr := e.secondsFrom(st, st.HeartbeatSeconds, st.HeartbeatSecondsPath, in, "HeartbeatSecondsPath")
	if serr != nil {
		return true, e.failExecution(x, nil, serr.Name, serr.Cause)
	}
	params, err := json.Marshal(eff)
	if err != nil {
		return true, e.failExecution(x, nil, ErrRuntime, err.Error())
	}
	now := e.now()
	tc := &taskCursor{Token: token, Params: params, Heartbeat: hb}
	sched := map[string]any{"resourceType": typ, "resource": res, "region": e.region, "parameters": string(params)}
	if timeout > 0 {
		tc.Deadline = now.Add(time.Duration(timeout) * time.Second).UnixMilli()
		sched["timeoutInSeconds"] = timeout
	}
	if hb > 0 {
		sched["heartbeatInSeconds"] = hb
	}
	events := []newEvent{
		{Type: "TaskScheduled", TS: now, Details: map[string]any{"taskScheduledEventDetails": sched}},
		{Type: "TaskStarted", TS: now, Details: map[string]any{"taskStartedEventDetails": map[string]any{"resourceType": typ, "resource": res}}},
	}
	next := x.cur
	next.RetryAt = 0
	next.Task = tc
	switch {
	case token == "" && !x.pendingOutcome:
		// Without a token the attempt's start need not be durable
		// before the call: after a crash it is made again, as it is
		// when the process dies during the call.
		if err := e.advance(x, next, events, false); err != nil {
			return true, err
		}
	case token == "":
		// An earlier task's outcome waits in pending: it is made
		// durable before this call.
		if err := e.commit(x, next, events, nil); err != nil {
			return true, err
		}
	default:
		if err := e.commit(x, next, events, &tokenRow{Token: token, State: st.Name, Heartbeat: now}); err != nil {
			return true, err
		}
	}
	return false, nil
}

// invoke calls the task's integration, racing it against the task timeout.
func (e *Executor) invoke(x *execRun, st *State, tc *taskCursor) (any, *StateError, error) {
	ctx, cancel := context.WithCancel(x.ctx)
	defer cancel()
	type res struct {
		v    any
		serr *StateError
	}
	ch := make(chan res, 1)
	go func() {
		v, serr := e.callIntegration(ctx, x, st.Resource, tc.Params)
		ch <- res{v, serr}
	}()
	var timer <-chan time.Time
	if tc.Deadline > 0 {
		c, stop := e.clock.NewTimer(time.UnixMilli(tc.Deadline).Sub(e.clock.Now()))
		defer stop()
		timer = c
	}
	select {
	case r := <-ch:
		if x.ctx.Err() != nil {
			return nil, nil, errShutdown
		}
		return r.v, r.serr, nil
	case <-timer:
		return nil, &StateError{Name: ErrTimeout, Cause: fmt.Sprintf("state %q: task timed out", st.Name)}, nil
	case <-x.ctx.Done():
		return nil, nil, errShutdown
	}
}

// awaitToken waits for SendTaskSuccess/Failure on the attempt's token or
// for its timeout or heartbeat timeout. The outcome is read from the store,
// so one that arrived while no process was running is not lost.
func (e *Executor) awaitToken(x *execRun, st *State, tc *taskCursor) (any, *StateError, error) {
	for {
		t, err := e.store.token(x.ctx, tc.Token)
		if err != nil {
			return nil, nil, err
		}
		switch t.Status {
		case tokSucceeded:
			v, err := decodeJSON([]byte(t.Output.String))
			if err != nil {
				return nil, &StateError{Name: ErrRuntime, Cause: "task output: " + err.Error()}, nil
			}
			return v, nil, nil
		case tokFailed, tokTimedOut:
			cause := t.Cause.String
			if t.Status == tokTimedOut {
				cause = fmt.Sprintf("state %q: no heartbeat or result in time", st.Name)
			}
			return nil, &StateError{Name: t.Error.String, Cause: cause}, nil
		case tokClosed:
			return nil, nil, errNotRunning
		}
		if e.lostTask(x, st, tc) {
			// Its process died with the one that started it: no heartbeat
			// or result can come, so the wait ends now, not at the
			// heartbeat timeout.
			e.log.Warn("states: the task of an earlier process is gone: timing out its token", "execution", x.rec.ARN, "state", st.Name)
			if err := e.store.timeoutToken(x.ctx, tc.Token, t.Heartbeat, ErrHeartbeatTimeout); err != nil {
				return nil, nil, err
			}
			continue
		}
		now := e.clock.Now()
		var deadline time.Time
		name := ErrTimeout
		if tc.Deadline > 0 {
			deadline = time.UnixMilli(tc.Deadline)
		}
		if tc.Heartbeat > 0 {
			hbd := t.Heartbeat.Add(time.Duration(tc.Heartbeat) * time.Second)
			if deadline.IsZero() || hbd.Before(deadline) {
				deadline, name = hbd, ErrHeartbeatTimeout
			}
		}
		if !deadline.IsZero() && !now.Before(deadline) {
			if err := e.store.timeoutToken(x.ctx, tc.Token, t.Heartbeat, name); err != nil {
				return nil, nil, err
			}
			continue
		}
		var timer <-chan time.Time
		stop := func() bool { return false }
		if !deadline.IsZero() {
			timer, stop = e.clock.NewTimer(deadline.Sub(now))
		}
		select {
		case <-x.poke:
		case <-timer:
		case <-x.ctx.Done():
			stop()
			return nil, nil, errShutdown
		}
		stop()
	}
}

// taskSucceeded records a task's success and moves on; stored says the
// result is durable already (a token's, see transitionFrom).
func (e *Executor) taskSucceeded(x *execRun, st *State, raw, result any, stored bool) error {
	typ, res := st.Resource.resourceNames()
	out, _ := json.Marshal(result)
	events := []newEvent{{Type: "TaskSucceeded", TS: e.now(), Details: map[string]any{"taskSucceededEventDetails": map[string]any{
		"resourceType": typ, "resource": res, "output": string(out), "outputDetails": map[string]any{"truncated": false}}}}}
	output, serr := stateOutput(st, raw, result, e.contextObject(x, st, ""))
	if serr != nil {
		if serr.Name == ErrRuntime {
			return e.failExecution(x, events, serr.Name, serr.Cause)
		}
		return e.taskFailed(x, st, raw, serr, events)
	}
	return e.transitionFrom(x, st, output, nextOf(st), events, stored)
}

// taskFailed records a failed attempt and retries, catches or fails the
// execution.
func (e *Executor) taskFailed(x *execRun, st *State, raw any, serr *StateError, pre []newEvent) error {
	typ, res := st.Resource.resourceNames()
	now := e.now()
	events := pre
	if x.cur.Task != nil {
		kind, key := "TaskFailed", "taskFailedEventDetails"
		if serr.Name == ErrTimeout || serr.Name == ErrHeartbeatTimeout {
			kind, key = "TaskTimedOut", "taskTimedOutEventDetails"
		}
		events = append(events, newEvent{Type: kind, TS: now, Details: map[string]any{key: map[string]any{
			"resourceType": typ, "resource": res, "error": serr.Name, "cause": serr.Cause}}})
	}
	if serr.Name == ErrRuntime || serr.Name == ErrDataLimitExceeded {
		return e.failExecution(x, events, serr.Name, serr.Cause)
	}
	retries := x.cur.Retries
	if len(retries) != len(st.Retry) {
		retries = make([]int, len(st.Retry))
	}
	if i, ok := retryDecision(st.Retry, retries, serr.Name); ok {
		delay := retryDelay(st.Retry[i], retries[i], e.rand())
		next := x.cur
		next.Retries = append([]int(nil), retries...)
		next.Retries[i]++
		next.Task = nil
		next.RetryAt = max(now.Add(delay).UnixMilli(), 1)
		return e.commit(x, next, events, nil)
	}
	if c, ok := catchFor(st.Catch, serr.Name); ok {
		out, err := applyResultPath(c.ResultPath, raw, map[string]any{"Error": serr.Name, "Cause": serr.Cause})
		if err != nil {
			return e.failExecution(x, events, ErrResultPathMatchFail, err.Error())
		}
		return e.transition(x, st, out, c.Next, events)
	}
	return e.failExecution(x, events, serr.Name, serr.Cause)
}

// ProcessBoundTasks is a TaskRunner whose tasks cannot outlive the process
// that started them (ExecTaskRunner: its children are killed when it
// dies). An executor resuming an ecs:runTask.waitForTaskToken wait whose
// task an earlier process started times the token out at once, as
// States.HeartbeatTimeout, instead of waiting out HeartbeatSeconds for a
// task that is gone.
type ProcessBoundTasks interface {
	TaskRunner
	TasksDieWithProcess() bool
}

// lostTask reports whether tc waits on an ecs task that an earlier process
// started and that died with it.
func (e *Executor) lostTask(x *execRun, st *State, tc *taskCursor) bool {
	if st.Resource != ECSRunTaskWithToken || x.taskHere == tc.Token {
		return false
	}
	pb, ok := e.tasks.(ProcessBoundTasks)
	return ok && pb.TasksDieWithProcess()
}
