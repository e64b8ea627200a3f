package compose_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// TestResolveContinuesTheRun: on both stores, a run the version check
// stopped at an approval (the approval cancelled, nothing to settle) is
// resolved by a person through the api function, as asked of the build
// that wrote it: the approval is pending again, the run leaves
// needs_human, and a new execution drives it on (ContinueRun) without
// waiting for the sweeper.
func TestResolveContinuesTheRun(t *testing.T) {
	for _, be := range []backend{onSQLite, onAWS} {
		t.Run(be.String(), func(t *testing.T) {
			w := newWorld(t, be, worldOptions{})
			ctx := context.Background()
			r := createRun(t, w.store, fixtureRun, iamARN)
			r, err := w.store.AcquireLease(ctx, r.ID, "worker", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			args := json.RawMessage(`{"title":"Q3"}`)
			hash, _ := run.ArgsHash(args)
			it := run.PlanItem{ID: "item_b1", Order: 1, Tool: "publish_report", Args: args, ArgsHash: hash, Mode: run.ModeMutating, Status: run.PlanAwaitingApproval}
			ap := run.Approval{ID: "apr_b1", PlanItemID: it.ID, Tool: it.Tool, Mode: it.Mode, Args: args}
			why := "agent version 23acb76f1826 → ed2ab4e34785: schema changed"
			if _, err := w.store.Commit(ctx, store.Commit{RunID: r.ID, Token: r.Lease.Token, Run: &store.RunPatch{Status: run.StatusRunning},
				PlanItems: []run.PlanItem{it}, NewApprovals: []run.Approval{ap}}); err != nil {
				t.Fatal(err)
			}
			if _, err := w.store.Commit(ctx, store.Commit{RunID: r.ID, Token: r.Lease.Token, CancelApprovals: []string{ap.ID},
				Run:    &store.RunPatch{Status: run.StatusNeedsHuman, Error: &why, ReleaseLease: true},
				Events: []run.Event{{Type: "agent_upgrade_blocked"}, {Type: run.EventRunNeedsHuman}}}); err != nil {
				t.Fatal(err)
			}
			if resp := w.as(t, "POST", "/v1/runs/"+fixtureRun+"/resolve", `{"decision":"old_version"}`); resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("resolve without a reason: %d %s, want 400", resp.StatusCode, resp.Body)
			}
			resp := w.as(t, "POST", "/v1/runs/"+fixtureRun+"/resolve", `{"decision":"old_version","reason":"v1 is deployed again"}`)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("resolve: %d %s", resp.StatusCode, resp.Body)
			}
			got, err := w.store.GetApproval(ctx, r.ID, ap.ID)
			if err != nil || got.Status != run.ApprovalPending || got.ArgsHash != hash {
				t.Fatalf("approval %+v, %v: want pending again with its args hash", got, err)
			}
			waitFor(t, "a worker taking the resolved run", func() (bool, error) {
				evs := w.events(t)
				for i, e := range evs {
					if e.Type == run.EventRunResolved {
						return countEvents(evs[i:], run.EventLeaseAcquired) > 0, nil
					}
				}
				return false, nil
			})
		})
	}
}
