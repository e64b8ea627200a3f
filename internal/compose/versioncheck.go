package compose

import (
	"context"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

var _ api.VersionChecker = (*Runtime)(nil)

// CheckVersion implements api.VersionChecker: the verdict this runtime's
// Step would give r's records, as upgrade-check decides it (a pinned run
// whose version has a home continues there), but for the run as it
// stands, needs_human or not — or, with assume, as it would stand after
// that resolution (store.Resolve decides which approvals it changes;
// its refusals, such as a needs_human operation, are returned). It
// changes nothing.
func (rt *Runtime) CheckVersion(ctx context.Context, r run.Run, assume *store.Resolution) (agentver.Verdict, error) {
	var rr harness.RecordReader = rt.Store
	if assume != nil {
		items, err := rt.Store.ListPlanItems(ctx, r.ID)
		if err != nil {
			return agentver.Verdict{}, err
		}
		aps, err := rt.Store.ListApprovals(ctx, r.ID)
		if err != nil {
			return agentver.Verdict{}, err
		}
		ops, err := rt.Store.ListOperations(ctx, r.ID, false)
		if err != nil {
			return agentver.Verdict{}, err
		}
		changed, _, err := store.Resolve(*assume, r, items, aps, ops, time.Now()) // the time is not read
		if err != nil {
			return agentver.Verdict{}, err
		}
		after := map[string]run.Approval{}
		for _, c := range changed {
			after[c.Approval.ID] = c.Approval
		}
		for i, a := range aps {
			if c, ok := after[a.ID]; ok {
				aps[i] = c
			}
		}
		rr = resolvedView{RecordReader: rt.Store, approvals: aps}
	}
	row, err := rt.stepVerdict(ctx, r, rr)
	return row.Verdict, err
}

// resolvedView reads a run's records as a resolution would leave them.
type resolvedView struct {
	harness.RecordReader
	approvals []run.Approval
}

func (v resolvedView) ListApprovals(context.Context, string) ([]run.Approval, error) {
	return v.approvals, nil
}
