package states

import (
	"fmt"
	"time"
)

// A Wait state: its timer and how long it waits.

// sleepUntil waits on the executor clock until t.
func (e *Executor) sleepUntil(x *execRun, t time.Time) error {
	for {
		d := t.Sub(e.clock.Now())
		if d <= 0 {
			return nil
		}
		c, stop := e.clock.NewTimer(d)
		select {
		case <-c:
		case <-x.ctx.Done():
			stop()
			return errShutdown
		}
	}
}

func (e *Executor) runWait(x *execRun, st *State, raw any) error {
	if x.cur.WaitUntil == 0 {
		in, err := applyPath(st.InputPath, raw)
		if err != nil {
			return e.failExecution(x, nil, ErrRuntime, "InputPath: "+err.Error())
		}
		now := e.now()
		var until time.Time
		switch {
		case st.HasSeconds:
			until = now.Add(time.Duration(st.Seconds) * time.Second)
		case st.HasTimestamp:
			until = st.Timestamp
		case st.SecondsPath != nil:
			v, err := st.SecondsPath.Get(in)
			n, ierr := toInt(v)
			if err != nil || ierr != nil || n < 0 {
				return e.failExecution(x, nil, ErrRuntime, fmt.Sprintf("state %q: SecondsPath %s must select a non-negative integer", st.Name, st.SecondsPath.Raw))
			}
			until = now.Add(time.Duration(n) * time.Second)
		case st.TimestampPath != nil:
			v, err := st.TimestampPath.Get(in)
			s, _ := v.(string)
			t, perr := time.Parse(time.RFC3339Nano, s)
			if err != nil || perr != nil {
				return e.failExecution(x, nil, ErrRuntime, fmt.Sprintf("state %q: TimestampPath %s must select a timestamp", st.Name, st.TimestampPath.Raw))
			}
			until = t
		}
		// The end time is absolute and persisted: a restart does not
		// restart the wait.
		next := x.cur
		next.WaitUntil = max(until.UnixMilli(), 1)
		if err := e.commit(x, next, nil, nil); err != nil {
			return err
		}
	}
	if err := e.sleepUntil(x, time.UnixMilli(x.cur.WaitUntil)); err != nil {
		return err
	}
	out, err := applyPath(st.OutputPath, raw)
	if err != nil {
		return e.failExecution(x, nil, ErrRuntime, "OutputPath: "+err.Error())
	}
	return e.transition(x, st, out, nextOf(st), nil)
}
