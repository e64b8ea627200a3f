package crash

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/notify"
)

// The channels a person's decision reaches a run through, as WakeScenario
// plays them.
const (
	ChannelAPI   = "api"   // POST /v1/runs/{id}/approvals/{approval_id}
	ChannelLink  = "link"  // the one-time link of the approval's notification
	ChannelRaise = "raise" // POST /v1/runs/{id}/limits (`keel raise`)
)

// WakeChannels are every channel WakeScenario plays.
var WakeChannels = []string{ChannelAPI, ChannelLink, ChannelRaise}

// wakeLinkKey is the link key of the link rows' keel dev: the suite
// derives the link a notification worker would send.
const wakeLinkKey = "0f4c2b7e9a1d3c5b6e8f0a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e2f4a6b8c0d"

// WakeScenarioName names the row of channel (and retry).
func WakeScenarioName(channel string, retry bool) string {
	if retry {
		return "decision " + channel + " killed before wake, retried"
	}
	return "decision " + channel + " killed before wake"
}

// WakeScenario sends one decision through channel to a keel dev armed at
// harness.FaultBeforeWake: it dies with the decision durable and the
// run's wait not woken (issue #40: the write gap of a link or a raise).
// A fresh keel dev must then deliver it without being asked again (the
// sweeper's wake at start); with retry, the same decision is sent again
// through the same channel first, as a user would, and must be answered
// with the decision, not refused. Either way the run then completes with
// one publication, and the driver's lost-wakeup guard fails the row if
// the run stays awaiting_approval.
func WakeScenario(channel string, retry bool) *Scenario {
	sc := &Scenario{Name: WakeScenarioName(channel, retry), Contract: "lookup",
		Incarnations: []Incarnation{{Fault: harness.FaultBeforeWake}},
		Expect:       Expect{Statuses: allowed(run.StatusCompleted), Approval: true, Kills: 1}}
	switch channel {
	case ChannelLink:
		sc.Env = []string{"KEEL_NOTIFY_LINK_KEY=" + wakeLinkKey, "KEEL_NOTIFY_INTERVAL=100ms"}
	case ChannelRaise:
		sc.Env = []string{"RESEARCH_ON_LIMIT=pause"}
	}
	sc.play = func(ctx context.Context, n *node, st *driveState, _ *Result) (Evidence, error) {
		if err := n.startKeel(ctx, harness.FaultBeforeWake); err != nil {
			return Evidence{}, err
		}
		if err := n.decideOnce(ctx, st, channel, false); err != nil {
			return Evidence{}, err
		}
		select {
		case <-n.keel.exited:
		case <-ctx.Done():
			return Evidence{}, fmt.Errorf("keel dev did not die at %s: %w", harness.FaultBeforeWake, ctx.Err())
		}
		if !n.keel.sigkilled() {
			return Evidence{}, fmt.Errorf("keel dev exited without being killed: %v", n.keel.err)
		}
		st.kills++
		st.approved = true // the driver must not repeat the decision: the wake is what is tested
		if err := n.startKeel(ctx, ""); err != nil {
			return Evidence{}, err
		}
		st.decidedAt = time.Now()
		if retry {
			if err := n.decideOnce(ctx, st, channel, true); err != nil {
				return Evidence{}, err
			}
		}
		if err := n.drive(ctx, st); err != nil {
			return Evidence{}, err
		}
		return n.finish(ctx, st)
	}
	return sc
}

// decideOnce creates the run (first time), waits until it asks for the
// decision channel answers, and sends it. A first send dies with keel dev
// (no answer is expected); a retry must be answered with the decision.
func (n *node) decideOnce(ctx context.Context, st *driveState, channel string, retry bool) error {
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("run %q never asked for a %s decision: %w", st.runID, channel, ctx.Err())
		case <-n.keel.exited:
			return fmt.Errorf("keel dev died before the decision was sent: %v (log %s)", n.keel.err, n.keel.log)
		case <-tick.C:
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		sent, err := n.tryDecide(cctx, st, channel, retry)
		cancel()
		if err != nil || sent {
			return err
		}
	}
}

// tryDecide sends the decision if the run waits for it, and reports
// whether it did.
func (n *node) tryDecide(ctx context.Context, st *driveState, channel string, retry bool) (bool, error) {
	if st.runID == "" {
		req := api.CreateRunRequest{Agent: n.cfg.agent(), Input: n.cfg.input()}
		if channel == ChannelRaise {
			// The research run makes four tool calls: it pauses before
			// its third, the draft, ahead of the publication's approval.
			req.Limits = &api.LimitsRequest{MaxToolCalls: 2}
		}
		r, _, err := n.c.CreateRun(ctx, req, st.key)
		if err != nil {
			return false, fmt.Errorf("create run: %w", err)
		}
		st.runID = r.RunID
	}
	aps, err := n.c.ListApprovals(ctx, st.runID)
	if err != nil {
		return false, nil // not yet (keel dev may be starting)
	}
	var a api.Approval
	for _, x := range aps {
		if (channel == ChannelRaise) != (x.Tool == harness.RaiseLimitTool) {
			continue // the driver approves the others later
		}
		if x.Status == run.ApprovalPending || (retry && x.Status == run.ApprovalApproved) {
			a = x
		}
	}
	if a.ApprovalID == "" {
		return false, nil
	}
	switch channel {
	case ChannelAPI:
		_, err = n.c.Decide(ctx, st.runID, a.ApprovalID, api.DecisionRequest{Decision: api.DecisionApprove, ArgsHash: a.ArgsHash})
		var ae *api.Error
		if retry && errors.As(err, &ae) && ae.Code == api.CodeApprovalNotPending {
			err = nil // the documented answer to a repeat, which wakes the wait again
		}
	case ChannelRaise:
		_, err = n.c.DecideLimit(ctx, st.runID, api.LimitDecisionRequest{Decision: api.LimitRaise})
	case ChannelLink:
		var sent bool
		sent, err = n.postLink(ctx, st.runID, a)
		if !sent && err == nil {
			return false, nil // the link is not derived yet
		}
	default:
		return false, fmt.Errorf("unknown channel %q", channel)
	}
	if retry && err != nil {
		return false, fmt.Errorf("the %s decision, sent again after the crash, was refused: %w", channel, err)
	}
	return true, nil // a first send's error is keel dev dying mid-request
}

// postLink approves a through the link its notification carries, once the
// notification worker derived it.
func (n *node) postLink(ctx context.Context, runID string, a api.Approval) (bool, error) {
	ns, err := n.c.Notifications(ctx, runID)
	if err != nil {
		return false, nil
	}
	for _, nt := range ns {
		if nt.Kind != run.NotifyApproval || nt.ApprovalID != a.ApprovalID || nt.LinkExpiresAt.IsZero() {
			continue
		}
		nt.RunID = runID
		u := n.c.BaseURL() + notify.LinkPath + notify.LinkToken([]byte(wakeLinkKey), nt)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(url.Values{"decision": {api.DecisionApprove}}.Encode()))
		if err != nil {
			return false, err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return true, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		if resp.StatusCode != http.StatusOK {
			return true, fmt.Errorf("link answered %d: %s", resp.StatusCode, body)
		}
		return true, nil
	}
	return false, nil
}
