package devserver

import (
	"context"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// The decision path's fault points, for the crash suite's simulator
// (issue 40): a person's decision is more than one write — a link is
// spent, then the approval decided, then the waiting run woken — and a
// keel dev killed between them must lose nothing. They sit in the API's
// store, so every channel (the API, a link, MCP, a raise) meets them.
const (
	// FaultAfterLinkUsed: a one-time link is spent; the approval it
	// decides is not yet decided.
	FaultAfterLinkUsed = "after_link_used"
	// FaultAfterDecisionStored: an approval's decision is stored; the
	// run waiting on it is not yet woken.
	FaultAfterDecisionStored = "after_decision_stored"
)

// decisionFaults wraps the API's store with the decision path's fault
// points when KEEL_FAULTPOINT (spec) names one of them; otherwise it
// returns st itself, so an unarmed keel dev runs the store unwrapped.
func decisionFaults(st api.Store, spec string, f harness.FaultPoints) api.Store {
	name, _, _ := strings.Cut(spec, ":")
	if f == nil || (name != FaultAfterLinkUsed && name != FaultAfterDecisionStored) {
		return st
	}
	return faultStore{Store: st, faults: f}
}

type faultStore struct {
	api.Store
	faults harness.FaultPoints
}

func (s faultStore) UseNotificationLink(ctx context.Context, runID, id, linkHash string, now time.Time) (run.Notification, error) {
	n, err := s.Store.UseNotificationLink(ctx, runID, id, linkHash, now)
	if err == nil {
		s.faults.Hit(FaultAfterLinkUsed)
	}
	return n, err
}

func (s faultStore) DecideApproval(ctx context.Context, d store.Decision) (run.Approval, error) {
	a, err := s.Store.DecideApproval(ctx, d)
	if err == nil {
		s.faults.Hit(FaultAfterDecisionStored)
	}
	return a, err
}

// CheckIntegrity keeps the wrapped store's integrity check visible to
// the API (store.IntegrityChecker).
func (s faultStore) CheckIntegrity(ctx context.Context) error {
	if ic, ok := s.Store.(store.IntegrityChecker); ok {
		return ic.CheckIntegrity(ctx)
	}
	return nil
}
