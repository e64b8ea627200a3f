package mcptool

import (
	"context"
	"time"

	"github.com/keelrun/keel/internal/runspace"
)

// A sandboxed stdio server (Server.Sandboxed) serves one run: what one
// run's calls leave in it — files in its /tmp, state in its memory — never
// reaches another run's, and it works in that run's workspace, mounted at
// /workspace, which the run's checkpoints version. The server the worker
// started to list the tools serves no run.

// runServer is one run's server, closed when no call has started for
// the longest a call may take and a minute more (a run that waits for a
// person holds no process; no call is ever cut); the run's next call
// starts it again.
type runServer struct {
	c    *client
	idle *time.Timer
}

// forRun is the client a call of runID goes through: c itself, unless the
// server is sandboxed and ctx carries the run's workspace.
func (c *client) forRun(ctx context.Context, runID string) *client {
	if !c.srv.Sandboxed || c.srv.Isolate == nil || runID == "" || c.workspace != "" {
		return c
	}
	t, ok := runspace.From(ctx)
	if !ok {
		return c
	}
	c.runsMu.Lock()
	defer c.runsMu.Unlock()
	idle := c.timeout() + time.Minute
	if rs, ok := c.runs[runID]; ok {
		rs.idle.Reset(idle)
		return rs.c
	}
	rc := newClient(c.srv)
	rc.workspace = t.Dir()
	rs := &runServer{c: rc}
	rs.idle = time.AfterFunc(idle, func() { c.closeRun(runID, rs) })
	c.runs[runID] = rs
	return rc
}

// closeRun stops a run's server that has been idle.
func (c *client) closeRun(runID string, rs *runServer) {
	c.runsMu.Lock()
	if c.runs[runID] == rs {
		delete(c.runs, runID)
	}
	c.runsMu.Unlock()
	rs.c.mu.Lock()
	cs := rs.c.session
	rs.c.session = nil
	rs.c.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
}
