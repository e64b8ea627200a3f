package otelkeel

import (
	"context"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/kernel/span"
)

// TestOffCostsNothing: with no endpoint Setup builds no SDK, and every
// call the harness makes on the nil Telemetry and the nil Span it starts returns
// without allocating.
func TestOffCostsNothing(t *testing.T) {
	p, err := Setup(t.Context(), config.OTel{}, Process{Role: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Telemetry() != nil || p.traces != nil || p.metrics != nil {
		t.Fatalf("Setup with no endpoint built %+v", p)
	}
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	var tel *Telemetry
	ctx := context.Background()
	now := time.Now()
	allocs := testing.AllocsPerRun(100, func() {
		sctx, sp := tel.StartStep(ctx, span.Step{RunID: "run_1", Agent: "a", Start: now})
		tel.LeaseAcquired(sctx, "run_1", "w", 1, now)
		cctx, c := tel.StartChat(sctx, span.Chat{RunID: "run_1", Model: "m"})
		c.EndChat(cctx, span.ChatResult{InputTokens: 1})
		tctx, ts := tel.StartTool(sctx, span.Tool{RunID: "run_1", Tool: "t"})
		dctx, d := tel.StartDispatch(tctx, span.Op{OperationID: "op_1"})
		d.EndOp(dctx, "dispatched", "", "")
		ts.EndTool(tctx, "completed", "", "", "")
		tel.ApprovalRequested(sctx, span.Approval{ApprovalID: "apr_1"})
		tel.ApprovalDecided(sctx, span.Approval{ApprovalID: "apr_1"})
		tel.ApprovalClosed(sctx, "t")
		tel.NeedsHuman(sctx, "a", "why")
		tel.RunEnded(sctx, span.Run{RunID: "run_1", Status: "completed"})
		sp.Fenced()
		sp.EndStep(sctx, "done", "cp_1", "", "")
		_ = tel.CaptureContent() || c.Recording()
	})
	if allocs != 0 {
		t.Fatalf("a Step's telemetry calls with telemetry off allocate %.0f times, want 0", allocs)
	}
}

func TestSampler(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"", "ParentBased{root:AlwaysOnSampler"},
		{"always_off", "AlwaysOffSampler"},
		{"traceidratio", "TraceIDRatioBased{0.5}"},
		{"parentbased_traceidratio", "ParentBased{root:TraceIDRatioBased{0.5},remoteParentSampled:TraceIDRatioBased{0.5}"},
	} {
		if got := sampler(tc.name, 0.5).Description(); len(got) < len(tc.want) || got[:len(tc.want)] != tc.want {
			t.Errorf("sampler(%q) = %s, want %s...", tc.name, got, tc.want)
		}
	}
}
