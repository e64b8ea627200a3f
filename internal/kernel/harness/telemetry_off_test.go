package harness

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// TestTelemetryOffCostsNothing: with Options.Telemetry nil, every
// telemetry call a Step makes returns at once without allocating (and
// without calling into anything: a nil interface would panic if it did).
func TestTelemetryOffCostsNothing(t *testing.T) {
	h := &Harness{}
	s := &tracer{}
	ctx := context.Background()
	r := run.Run{ID: "run_1", Agent: "a"}
	it := run.PlanItem{ID: "pi_1", Tool: "t", CallID: "c1"}
	op := run.Operation{ID: "op_1", Tool: "t"}
	ap := run.Approval{ID: "apr_1", RunID: "run_1", Tool: "t"}
	fail := errors.New("boom")
	allocs := testing.AllocsPerRun(100, func() {
		sctx, sp := startStep(ctx, &h.opt, r, time.Time{})
		cctx, csp := s.startChat(sctx, model.Request{})
		s.endChat(cctx, csp, model.Response{}, nil)
		tctx, tsp := s.startTool(sctx, it, false)
		s.endTool(tctx, tsp, tool.Result{}, fail)
		ectx, esp := s.startTool(sctx, it, true)
		dctx, dsp := s.startOp(ectx, op, false)
		s.endDispatch(dctx, dsp, nil)
		rctx, rsp := s.startOp(ectx, op, true)
		s.endReconcile(rctx, rsp, ops.Found, nil)
		s.endEffect(ectx, esp, it, nil)
		s.approvalRequested(sctx, ap)
		s.approvalDecided(sctx, ap)
		s.approvalClosed(sctx, "t")
		runEnded(sctx, nil, r, Decision{Next: NextNeedsHuman})
		endStep(sctx, nil, sp, r, "", nil, Decision{Next: NextDone}, nil)
	})
	if allocs != 0 {
		t.Fatalf("a Step's telemetry with Options.Telemetry nil allocates %.0f times, want 0", allocs)
	}
}
