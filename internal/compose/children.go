package compose

import (
	"context"
	"errors"
	"sync"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// ChildRuns is the harness's harness.Children: child runs are stored in
// the runtime's store, started as the API starts a run (an execution named
// by the run id, so a start repeated after a crash is the same one), and
// cancelled as a person's cancel does, waking the approval waits it
// withdraws. The role that owns the execution service binds it (Bind);
// until then a child is stored but not started, and the sweeper starts
// it as any run stored without an execution.
type ChildRuns struct {
	Store store.Store

	mu      sync.Mutex
	starter api.Starter
	resumer api.Resumer
}

var _ harness.Children = (*ChildRuns)(nil)

// Bind sets how child runs are started and how the waits of a cancelled
// one are woken. Call it before the harness steps runs.
func (c *ChildRuns) Bind(s api.Starter, r api.Resumer) {
	c.mu.Lock()
	c.starter, c.resumer = s, r
	c.mu.Unlock()
}

func (c *ChildRuns) bound() (api.Starter, api.Resumer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.starter, c.resumer
}

// CreateRun implements harness.Children.
func (c *ChildRuns) CreateRun(ctx context.Context, r run.Run) (run.Run, bool, error) {
	return c.Store.CreateRun(ctx, r)
}

// StartRun implements harness.Children; without a starter it leaves the
// run to the sweeper.
func (c *ChildRuns) StartRun(ctx context.Context, runID string) error {
	if s, _ := c.bound(); s != nil {
		return s.StartRun(ctx, runID)
	}
	return nil
}

// StartsDeferred says StartRun leaves runs unstarted (no starter bound:
// the step role on AWS), so a parent's Step names them for the state
// machine to start.
func (c *ChildRuns) StartsDeferred() bool {
	s, _ := c.bound()
	return s == nil
}

// CancelRun implements harness.Children: a finished run is left as it is.
func (c *ChildRuns) CancelRun(ctx context.Context, runID, by string) error {
	_, withdrawn, err := c.Store.RequestCancel(ctx, runID, by)
	if errors.Is(err, store.ErrTerminal) {
		return nil
	}
	if err != nil {
		return err
	}
	_, res := c.bound()
	for _, ap := range withdrawn {
		if res == nil {
			break
		}
		if err := res.Resume(ctx, ap); err != nil {
			return err
		}
	}
	return nil
}

// children makes the runtime's ChildRuns on first use.
func (rt *Runtime) children() *ChildRuns {
	if rt.Children == nil {
		rt.Children = &ChildRuns{Store: rt.Store}
	}
	return rt.Children
}
