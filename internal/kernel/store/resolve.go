package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
)

// A run the version check stopped (harness, version.go: an approval or a
// call written under one version of its agent that the running version
// would read differently) is needs_human with nothing to settle. A
// person's Resolution is the decision it waits for.

// ResolveDecision is what a person decided for a run the version check
// stopped.
type ResolveDecision string

const (
	// ResolveOldVersion: the version that wrote the run's records goes on
	// with it (its build is running again). The approvals the check
	// cancelled are pending again, under their exact arguments and hash;
	// approvals already given stay given. The caller makes sure the
	// deployment runs that version: another one would stop the run again.
	ResolveOldVersion ResolveDecision = "old_version"
	// ResolveDeny: the calls the run waits to make are denied, and the run
	// goes on under the running version: each approval of a call not yet
	// made (pending, given, or cancelled by the check) becomes denied with
	// Reason, so the model is told the call was not made and may ask again
	// under the new version's schema (a new approval).
	ResolveDeny ResolveDecision = "deny"
)

// Valid reports whether d is a known decision.
func (d ResolveDecision) Valid() bool { return d == ResolveOldVersion || d == ResolveDeny }

// Resolution is a person's decision on a needs_human run that no
// operation holds.
type Resolution struct {
	RunID    string
	Decision ResolveDecision
	// By is who decided; Reason why (recorded, and for ResolveDeny the
	// denial the model reads).
	By, Reason string
}

// Resolver records a person's decision on a run stopped by the version
// check.
type Resolver interface {
	// ResolveRun applies res in one write: the approvals it changes (each
	// conditioned on its status as read), a run_resolved event (and an
	// approval_denied per denied approval), and the run's status running
	// with its error and lease cleared, so a worker takes it. ErrConflict
	// when the run is not needs_human or one of its operations is
	// needs_human (settle it: that is what the run waits on; a settle
	// racing this decision makes one of them find the run moved);
	// ErrNotFound for an unknown run; ErrInvalid for a malformed res.
	ResolveRun(ctx context.Context, res Resolution) (run.Run, error)
}

// ValidateResolution checks a Resolution: ids, a known decision, a reason
// of at most MaxText bytes.
func ValidateResolution(res Resolution) error {
	if err := checkIDs(field{"run id", res.RunID}, field{"resolved by", res.By}); err != nil {
		return err
	}
	if !res.Decision.Valid() {
		return invalid("decision %q: want old_version or deny", res.Decision)
	}
	if res.Reason == "" {
		return invalid("reason is empty: say why")
	}
	return checkSize("reason", len(res.Reason), MaxText)
}

// ResolvedApproval is one approval a Resolution changes: its new state,
// and the status it must still have when written.
type ResolvedApproval struct {
	Approval run.Approval
	From     run.ApprovalStatus
}

// Resolve decides what res changes, from the run's records read by the
// backend: the approvals (of plan items still awaiting approval: calls
// not made) and the events. ErrConflict when an operation of the run is
// needs_human. The backend writes it all in one write conditioned on
// what it read.
func Resolve(res Resolution, r run.Run, items []run.PlanItem, aps []run.Approval, ops []run.Operation, now time.Time) ([]ResolvedApproval, []run.Event, error) {
	if r.Status != run.StatusNeedsHuman {
		return nil, nil, fmt.Errorf("resolve %q: %w: the run is %s, not needs_human", res.RunID, ErrConflict, r.Status)
	}
	for _, op := range ops {
		if op.Status == run.OpNeedsHuman {
			return nil, nil, fmt.Errorf("resolve %q: %w: operation %s is needs_human: settle it", res.RunID, ErrConflict, op.ID)
		}
	}
	waiting := map[string]bool{}
	for _, it := range items {
		if it.Status == run.PlanAwaitingApproval {
			waiting[it.ID] = true
		}
	}
	var out []ResolvedApproval
	var ids []string
	var events []run.Event
	for _, a := range aps {
		if !waiting[a.PlanItemID] {
			continue
		}
		from := a.Status
		switch {
		case res.Decision == ResolveOldVersion && from == run.ApprovalCancelled:
			a.Status, a.DecidedBy, a.Reason, a.DecidedAt = run.ApprovalPending, "", "", time.Time{}
		case res.Decision == ResolveDeny && from != run.ApprovalDenied:
			a.Status, a.DecidedBy, a.Reason, a.DecidedAt = run.ApprovalDenied, res.By, res.Reason, now
			d, err := json.Marshal(map[string]string{"approval_id": a.ID, "decided_by": res.By, "args_hash": a.ArgsHash, "reason": res.Reason})
			if err != nil {
				return nil, nil, err
			}
			events = append(events, run.Event{Type: run.EventApprovalDenied, PlanItemID: a.PlanItemID, Data: d})
		default:
			continue
		}
		out = append(out, ResolvedApproval{Approval: a, From: from})
		ids = append(ids, a.ID)
	}
	if ids == nil {
		ids = []string{}
	}
	data, err := json.Marshal(map[string]any{"by": res.By, "decision": res.Decision, "reason": res.Reason,
		"from": run.StatusNeedsHuman, "approvals": ids})
	if err != nil {
		return nil, nil, err
	}
	events = append([]run.Event{{Type: run.EventRunResolved, Data: data}}, events...)
	return out, events, nil
}
