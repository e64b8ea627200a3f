package compose

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/kernel/span"
	"github.com/keelrun/keel/internal/observe/otelkeel"
	"github.com/keelrun/keel/internal/observe/otelkeel/otlptest"
)

// TestLambdaInvocationFlushes: a Lambda role's invocation has exported
// its spans and metrics by the time it answers — the batch's delay (an
// hour here) is not waited for, since Lambda may freeze the process right
// after.
func TestLambdaInvocationFlushes(t *testing.T) {
	rcv := otlptest.New(t)
	prov, err := otelkeel.Setup(t.Context(), config.OTel{TracesURL: rcv.URL() + "/v1/traces", MetricsURL: rcv.URL() + "/v1/metrics",
		MetricInterval: time.Hour}, otelkeel.Process{Role: "step"})
	if err != nil {
		t.Fatal(err)
	}
	defer prov.Shutdown(context.Background())
	rt := &Runtime{OTel: prov, Logger: slog.New(slog.DiscardHandler)}
	handler := func(ctx context.Context, in struct{ RunID string }) (string, error) {
		_, sp := prov.Telemetry().StartStep(ctx, span.Step{RunID: in.RunID, Agent: "research"})
		sp.EndStep(ctx, "continue", "", "", "")
		return "ok", nil
	}
	f := flushing{h: lambda.NewHandler(handler), fl: closer{rt}, log: rt.Logger}
	out, err := f.Invoke(t.Context(), []byte(`{"RunID":"run_1"}`))
	if err != nil || string(out) != `"ok"` {
		t.Fatalf("Invoke = %s, %v", out, err)
	}
	if s := rcv.Named("invoke_agent research"); len(s) != 1 || s[0].Attrs["keel.run.id"] != "run_1" || s[0].Resource["keel.role"] != "step" {
		t.Fatalf("spans at the receiver when the invocation answered: %+v", rcv.Spans())
	}
	if len(rcv.MetricPoints("keel.steps")) == 0 {
		t.Fatalf("metrics at the receiver when the invocation answered: %v", rcv.MetricNames())
	}
}
