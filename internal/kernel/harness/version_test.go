package harness_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
)

// openReader is a run's records as the version check reads them.
type openReader struct{ aps []run.Approval }

func (o openReader) ListOperations(context.Context, string, bool) ([]run.Operation, error) {
	return nil, nil
}
func (o openReader) ListApprovals(context.Context, string) ([]run.Approval, error) { return o.aps, nil }
func (o openReader) ListInputs(context.Context, string, bool) ([]run.Input, error) { return nil, nil }
func (o openReader) HasGrant(context.Context, string, string) (bool, error)        { return false, nil }

// TestOpenRecordsLeaveRaisesOut: a raise a person approved (Keel's own
// request, applied by the Step that woke; it has no plan item) is not
// something a run has open under its agent's version. The simulator
// (issue 40) found every run that was raised once stopped for a person
// by the next build, even one that changed only the instructions, with
// "approval apr_limit_… (keel.raise_limit) was asked for …'s arguments:
// the tool is gone", and resolve --deny refused (still_blocked).
func TestOpenRecordsLeaveRaisesOut(t *testing.T) {
	args := json.RawMessage(`{"artifact_key":"a","sha256":"b"}`)
	items := map[string]run.PlanItem{"call_1": {ID: "item_1", CallID: "call_1", Tool: "publish_report", Args: args, Status: run.PlanAwaitingApproval}}
	rr := openReader{aps: []run.Approval{
		{ID: "apr_limit_max_tool_calls_2", Tool: harness.RaiseLimitTool, Status: run.ApprovalApproved},
		{ID: "apr_limit_max_tool_calls_4", Tool: harness.RaiseLimitTool, Status: run.ApprovalPending},
		{ID: "apr_1", PlanItemID: "item_1", Tool: "publish_report", Status: run.ApprovalApproved},
	}}
	open, err := harness.OpenRecords(context.Background(), rr, run.Run{ID: "run_1"}, agentver.Definition{}, items, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(open.Approvals) != 1 || open.Approvals[0].ID != "apr_1" {
		t.Fatalf("open approvals %+v: want publish_report's only", open.Approvals)
	}
}
