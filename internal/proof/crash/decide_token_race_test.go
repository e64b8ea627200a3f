package crash

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/keelrun/keel/internal/backend/store/dynamo"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// attachMidway attaches a task token (as the AwaitApproval task does)
// right after DecideApproval has read the approval, before it writes.
type attachMidway struct {
	*dynamodb.Client
	other *dynamo.Store
	runID string
	done  bool
}

func (c *attachMidway) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := c.Client.GetItem(ctx, in, o...)
	if sk, ok := in.Key["sk"].(*types.AttributeValueMemberS); ok && strings.HasPrefix(sk.Value, "AP#") && !c.done {
		c.done = true
		if _, aerr := c.other.AttachTaskToken(ctx, c.runID, strings.TrimPrefix(sk.Value, "AP#"), "tok-1"); aerr != nil {
			return nil, aerr
		}
	}
	return out, err
}

func TestDecideReturnsATokenAttachedMeanwhile(t *testing.T) {
	ctx := context.Background()
	a, err := StartLocalAWS()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	tbl, _, err := a.newWorld(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := dynamo.New(a.ddb, dynamo.Options{Table: tbl})
	r, _, err := other.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "s", Owner: "o", Agent: "research", Request: "x",
		InputPolicy: run.InputQueue, Limits: run.Limits{MaxSteps: 5, MaxTokens: 10, MaxSpendMicroUSD: 10, MaxToolCalls: 5}})
	if err != nil {
		t.Fatal(err)
	}
	lr, err := other.AcquireLease(ctx, r.ID, "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"a":1}`)
	if _, err := other.Commit(ctx, store.Commit{RunID: r.ID, Token: lr.Lease.Token, Run: &store.RunPatch{Status: run.StatusAwaitingApproval},
		NewApprovals: []run.Approval{{ID: "ap1", PlanItemID: "p1", Tool: "publish", Mode: run.ModeMutating, Args: args}},
		Events:       []run.Event{{Type: run.EventApprovalRequested}}}); err != nil {
		t.Fatal(err)
	}
	h, _ := run.ArgsHash(args)
	st, _ := dynamo.New(&attachMidway{Client: a.ddb, other: other, runID: r.ID}, dynamo.Options{Table: tbl})
	got, err := st.DecideApproval(ctx, store.Decision{RunID: r.ID, ApprovalID: "ap1", Approve: true, ArgsHash: h, DecidedBy: "p"})
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := other.GetApproval(ctx, r.ID, "ap1")
	t.Logf("DecideApproval returned token %q; stored approval: status %s token %q", got.TaskToken, stored.Status, stored.TaskToken)
	if got.TaskToken != stored.TaskToken {
		t.Errorf("DecideApproval returned task token %q, the stored approval has %q: nobody resumes the wait", got.TaskToken, stored.TaskToken)
	}
}
