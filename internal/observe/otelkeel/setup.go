package otelkeel

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.38.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/scrub"
)

// Providers are one process's trace and meter providers. The zero value
// (nothing configured) exports nothing; its Telemetry is nil.
type Providers struct {
	// secrets are masked in every exported span (see Mask).
	secrets atomic.Pointer[scrub.Secrets]
	traces  *sdktrace.TracerProvider
	metrics *sdkmetric.MeterProvider
	tel     *Telemetry
}

// Process names this process in the resource it exports under.
type Process struct {
	Role    string // KEEL_ROLE, or "dev", "task", "cli"
	Version string // Keel's version, when known
	// Secrets are masked in every exported span: the configuration's
	// (config.Config.Secrets); more may be added with Providers.Mask.
	Secrets scrub.Secrets
}

// Setup builds the providers o names: OTLP/HTTP exporters with a batch
// span processor and a periodic metric reader. With o not Enabled it
// builds nothing and returns the zero Providers. It does no network I/O:
// an unreachable collector shows at the first export, not here.
func Setup(ctx context.Context, o config.OTel, p Process) (*Providers, error) {
	if !o.Enabled() {
		return &Providers{}, nil
	}
	name := o.ServiceName
	if name == "" {
		name = "keel"
	}
	attrs := []attribute.KeyValue{semconv.ServiceName(name), attribute.String("keel.role", p.Role)}
	if p.Version != "" {
		attrs = append(attrs, semconv.ServiceVersion(p.Version))
	}
	for k, v := range o.ResourceAttributes {
		if k != string(semconv.ServiceNameKey) {
			attrs = append(attrs, attribute.String(k, v))
		}
	}
	res := resource.NewWithAttributes(semconv.SchemaURL, attrs...)
	out := &Providers{}
	out.secrets.Store(&p.Secrets)
	if o.TracesURL != "" {
		exp, err := newSpanExporter(ctx, o.TracesURL, o.TraceHeaders)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: %w", err)
		}
		var batch []sdktrace.BatchSpanProcessorOption
		if o.BatchDelay > 0 {
			batch = append(batch, sdktrace.WithBatchTimeout(o.BatchDelay))
		}
		exp = scrubExporter{SpanExporter: exp, secrets: &out.secrets}
		out.traces = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, batch...), sdktrace.WithResource(res),
			sdktrace.WithSampler(sampler(o.Sampler, o.SamplerArg)), sdktrace.WithIDGenerator(newIDs()))
	}
	if o.MetricsURL != "" {
		exp, err := newMetricExporter(ctx, o.MetricsURL, o.MetricHeaders)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: %w", err)
		}
		interval := o.MetricInterval
		if interval <= 0 {
			interval = time.Minute
		}
		out.metrics = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
			sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(interval))))
	}
	// Interfaces, not typed nils: New tells "no traces" by a nil value.
	var tp trace.TracerProvider
	var mp metric.MeterProvider
	if out.traces != nil {
		tp = out.traces
	}
	if out.metrics != nil {
		mp = out.metrics
	}
	tel, err := New(tp, mp, o.CaptureContent)
	if err != nil {
		return nil, err
	}
	out.tel = tel
	return out, nil
}

// Mask adds values to the secrets masked in the spans exported from now
// on (keel dev's token, made after the providers). Safe on the zero
// Providers and concurrently with exports.
func (p *Providers) Mask(values ...string) {
	if p == nil {
		return
	}
	for {
		old := p.secrets.Load()
		var cur scrub.Secrets
		if old != nil {
			cur = *old
		}
		next := cur.With(values...)
		if p.secrets.CompareAndSwap(old, &next) {
			return
		}
	}
}

// Telemetry is what the harness records through; nil when nothing is
// exported.
func (p *Providers) Telemetry() *Telemetry {
	if p == nil {
		return nil
	}
	return p.tel
}

// Flush exports every span ended and every metric recorded so far. A
// Lambda role calls it at the end of each invocation: Lambda freezes the
// process between invocations, and a batch held in memory then may never
// leave.
func (p *Providers) Flush(ctx context.Context) error {
	if p == nil {
		return nil
	}
	var errs []error
	if p.traces != nil {
		errs = append(errs, p.traces.ForceFlush(ctx))
	}
	if p.metrics != nil {
		errs = append(errs, p.metrics.ForceFlush(ctx))
	}
	return errors.Join(errs...)
}

// Shutdown flushes and stops the exporters (keel dev and the task on
// their way out).
func (p *Providers) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	var errs []error
	if p.traces != nil {
		errs = append(errs, p.traces.Shutdown(ctx))
	}
	if p.metrics != nil {
		errs = append(errs, p.metrics.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// sampler is OTEL_TRACES_SAMPLER's sampler (validated by internal/config).
// The only remote parent a Keel span has is its run's stored trace
// context, made at creation by Keel itself with no sampling decision
// behind its flag; so the parent-based samplers apply their root sampler
// to a remote parent too. A ratio decides by trace id: a run is recorded
// whole or not at all, in every process.
func sampler(name string, arg float64) sdktrace.Sampler {
	var root sdktrace.Sampler
	switch name {
	case "always_on":
		return sdktrace.AlwaysSample()
	case "always_off":
		return sdktrace.NeverSample()
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(arg)
	case "parentbased_always_off":
		root = sdktrace.NeverSample()
	case "parentbased_traceidratio":
		root = sdktrace.TraceIDRatioBased(arg)
	default:
		root = sdktrace.AlwaysSample()
	}
	return sdktrace.ParentBased(root, sdktrace.WithRemoteParentSampled(root), sdktrace.WithRemoteParentNotSampled(root))
}
