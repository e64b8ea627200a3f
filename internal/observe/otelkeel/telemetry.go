package otelkeel

import (
	"errors"

	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/semconv/v1.38.0/genaiconv"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// scope is the instrumentation scope name spans and metrics carry.
const scope = "github.com/keelrun/keel"

// Telemetry records Keel's spans and metrics. A nil *Telemetry records
// nothing and costs nothing: the harness holds one per process, nil when
// no exporter is configured.
type Telemetry struct {
	tracer  trace.Tracer
	capture bool

	tokens      metric.Int64Histogram   // gen_ai.client.token.usage
	opDuration  metric.Float64Histogram // gen_ai.client.operation.duration
	steps       metric.Int64Counter     // keel.steps
	toolLatency metric.Float64Histogram // keel.tool.duration
	approvals   metric.Int64UpDownCounter
	runs        metric.Int64Counter // keel.runs.finished
	needsHuman  metric.Int64Counter // keel.runs.needs_human
	reconciles  metric.Int64Counter // keel.reconciliations
}

// New builds a Telemetry on the given providers (either may be nil: that
// signal is not recorded; both nil: New returns nil). capture puts
// prompt, answer and tool content on spans.
func New(tp trace.TracerProvider, mp metric.MeterProvider, capture bool) (*Telemetry, error) {
	if tp == nil && mp == nil {
		return nil, nil
	}
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	t := &Telemetry{capture: capture, tracer: tp.Tracer(scope)}
	m := mp.Meter(scope)
	var errs []error
	tu, err := genaiconv.NewClientTokenUsage(m)
	errs = append(errs, err)
	t.tokens = tu.Inst()
	od, err := genaiconv.NewClientOperationDuration(m)
	errs = append(errs, err)
	t.opDuration = od.Inst()
	t.steps, err = m.Int64Counter("keel.steps", metric.WithUnit("{step}"), metric.WithDescription("Steps run, by agent and decision."))
	errs = append(errs, err)
	t.toolLatency, err = m.Float64Histogram("keel.tool.duration", metric.WithUnit("s"), metric.WithDescription("Tool-call latency, by tool and outcome."))
	errs = append(errs, err)
	t.approvals, err = m.Int64UpDownCounter("keel.approvals.waiting", metric.WithUnit("{approval}"),
		metric.WithDescription("Approvals requested and not yet decided (summed over processes)."))
	errs = append(errs, err)
	t.runs, err = m.Int64Counter("keel.runs.finished", metric.WithUnit("{run}"), metric.WithDescription("Runs that ended, by final status."))
	errs = append(errs, err)
	t.needsHuman, err = m.Int64Counter("keel.runs.needs_human", metric.WithUnit("{run}"), metric.WithDescription("Runs stopped for a person (an operation whose outcome is unknown)."))
	errs = append(errs, err)
	t.reconciles, err = m.Int64Counter("keel.reconciliations", metric.WithUnit("{operation}"), metric.WithDescription("Pending operations reconciled, by outcome."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return t, nil
}

// CaptureContent reports whether content goes on spans; the harness
// builds the (redacted) content only then.
func (t *Telemetry) CaptureContent() bool { return t != nil && t.capture }
