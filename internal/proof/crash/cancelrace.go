package crash

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
)

// CancelRacingApprovalName is the row of the bug the simulator found
// with seed 21 (issue 40): a cancel accepted while a Step is inside the
// model call that proposes the effect. The Step read the run's signals
// before the call and committed the approval request after it, so the
// run parked awaiting_approval with a pending approval and its cancel
// requested: nothing ends it until a person decides an action they
// asked to cancel.
const CancelRacingApprovalName = "cancel racing an approval request [lookup]"

// CancelRacingApprovalScenario holds the publish turn's model call in
// the transport's retry (one scripted 500, then a backoff of half a
// second to a second below the agent loop), cancels the run as soon as
// the draft is done — inside that call — and requires the run to end
// cancelled with no approval requested after the cancel.
func CancelRacingApprovalScenario(script []byte) (*Scenario, error) {
	var s map[string]any
	if err := json.Unmarshal(script, &s); err != nil {
		return nil, fmt.Errorf("research script: %w", err)
	}
	turns, _ := s["turns"].([]any)
	if len(turns) < 4 {
		return nil, fmt.Errorf("research script: %d turns, want the publish turn fourth", len(turns))
	}
	publish, _ := turns[3].(map[string]any)
	publish["faults"] = []any{map[string]any{"kind": "status_500", "attempts": 1}}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	sc := &Scenario{Name: CancelRacingApprovalName, Contract: "lookup", Script: b,
		Expect: Expect{Statuses: allowed(run.StatusCancelled), NoEffect: true}}
	sc.check = func(ev Evidence, res *Result) {
		cancelled := int64(0)
		for _, e := range ev.Events {
			switch {
			case e.Type == run.EventCancelRequested && cancelled == 0:
				cancelled = e.Seq
			case e.Type == run.EventApprovalRequested && cancelled > 0:
				res.fail("approval requested (seq %d) after the cancel was (seq %d): cancellation stops new calls", e.Seq, cancelled)
			}
		}
	}
	sc.play = func(ctx context.Context, n *node, st *driveState, res *Result) (Evidence, error) {
		return n.cancelRacingApproval(ctx, st, res)
	}
	return sc, nil
}

func (n *node) cancelRacingApproval(ctx context.Context, st *driveState, res *Result) (Evidence, error) {
	if err := n.startKeel(ctx, ""); err != nil {
		return Evidence{}, err
	}
	r, _, err := n.c.CreateRun(ctx, api.CreateRunRequest{Agent: n.cfg.agent(), Input: n.cfg.input()}, st.key)
	if err != nil {
		return Evidence{}, fmt.Errorf("create run: %w", err)
	}
	st.runID = r.RunID
	// The draft is done: the publish turn's call has begun, and its
	// retry holds it for half a second at least.
	if err := n.waitEvent(ctx, st.runID, func(e api.Event) bool {
		return e.Type == run.EventToolCompleted && eventData(e.Data)["tool"] == "draft_report"
	}); err != nil {
		return Evidence{}, err
	}
	if _, err := n.c.Cancel(ctx, st.runID); err != nil {
		return Evidence{}, fmt.Errorf("cancel: %w", err)
	}
	// The run must end; a pending approval asked after the cancel is the
	// bug, and nothing would end that wait.
	for {
		got, err := n.c.GetRun(ctx, st.runID)
		if err != nil {
			return Evidence{}, fmt.Errorf("get run: %w", err)
		}
		if got.Status.Terminal() {
			break
		}
		if got.Status == run.StatusAwaitingApproval && got.CancelRequested {
			aps, err := n.c.ListApprovals(ctx, st.runID)
			if err != nil {
				return Evidence{}, fmt.Errorf("approvals: %w", err)
			}
			for _, a := range aps {
				if a.Status == run.ApprovalPending {
					res.fail("STUCK: cancel requested and the run awaits approval %s (%s), requested after the cancel: no one ends it but a person's decision on the cancelled action", a.ApprovalID, a.Tool)
					return n.finish(ctx, st)
				}
			}
		}
		select {
		case <-ctx.Done():
			return Evidence{}, fmt.Errorf("run %s did not end after its cancel: %w", st.runID, ctx.Err())
		case <-time.After(25 * time.Millisecond):
		}
	}
	return n.finish(ctx, st)
}

// waitEvent waits until the run's log holds an event that matches.
func (n *node) waitEvent(ctx context.Context, runID string, match func(api.Event) bool) error {
	for {
		page, err := n.c.Events(ctx, runID, 0, 500)
		if err != nil {
			return fmt.Errorf("events: %w", err)
		}
		for _, e := range page.Events {
			if match(e) {
				return nil
			}
		}
		if page.Done {
			return fmt.Errorf("run %s ended without the event awaited", runID)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for an event of %s: %w", runID, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
