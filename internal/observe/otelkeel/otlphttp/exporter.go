package otlphttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/keelrun/keel/internal/kernel/model"
)

// Bounds of one export.
const (
	exportTimeout = 10 * time.Second
	maxAttempts   = 5
	firstBackoff  = 100 * time.Millisecond
	maxBackoff    = 2 * time.Second
)

// errStopped is what an exporter answers after Shutdown.
var errStopped = errors.New("otlphttp: exporter is shut down")

// client posts payloads to one OTLP/HTTP endpoint.
type client struct {
	url     string
	headers map[string]string
	http    *http.Client

	mu      sync.Mutex
	stopped bool
}

func newClient(endpoint string, headers map[string]string, hc *http.Client) (*client, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("endpoint %q: want an http or https URL", endpoint)
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &client{url: endpoint, headers: headers, http: hc}, nil
}

func (c *client) stop() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
}

// post sends body, retrying what the OTLP specification says is
// retryable (429, 502, 503, 504) until ctx or the export's bound ends.
func (c *client) post(ctx context.Context, body []byte) error {
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	if stopped {
		return errStopped
	}
	ctx, cancel := context.WithTimeout(ctx, exportTimeout)
	defer cancel()
	backoff := firstBackoff
	for attempt := 1; ; attempt++ {
		wait, err := c.once(ctx, body)
		if err == nil || wait < 0 || attempt == maxAttempts {
			return err
		}
		if wait == 0 {
			wait = backoff
			backoff = min(2*backoff, maxBackoff)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (after %d attempts: %w)", err, attempt, ctx.Err())
		case <-t.C:
		}
	}
}

// once sends one request. wait is how long to wait before a retry: -1
// when the failure is not retryable, 0 for the default backoff.
func (c *client) once(ctx context.Context, body []byte) (wait time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return -1, fmt.Errorf("otlphttp: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return -1, fmt.Errorf("otlphttp: %w", err)
		}
		return 0, fmt.Errorf("otlphttp: %w", err) // a connection failure: retried
	}
	// The body (a partial-success or a Status message) is read so the
	// connection can be reused, and never surfaced: it is the collector's.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch s := resp.StatusCode; {
	case s >= 200 && s <= 299:
		return 0, nil
	case s == http.StatusTooManyRequests || s == http.StatusBadGateway || s == http.StatusServiceUnavailable || s == http.StatusGatewayTimeout:
		return model.RetryAfter(resp.Header, time.Now()), fmt.Errorf("otlphttp: %s: HTTP %d", c.url, s)
	default:
		return -1, fmt.Errorf("otlphttp: %s: HTTP %d", c.url, s)
	}
}

// SpanExporter is an sdktrace.SpanExporter posting to one /v1/traces URL.
type SpanExporter struct{ c *client }

var _ sdktrace.SpanExporter = (*SpanExporter)(nil)

// NewSpanExporter builds a SpanExporter for the traces endpoint (the whole
// URL, path included) sending headers with every request; hc nil:
// http.DefaultClient. It does no I/O.
func NewSpanExporter(endpoint string, headers map[string]string, hc *http.Client) (*SpanExporter, error) {
	c, err := newClient(endpoint, headers, hc)
	if err != nil {
		return nil, err
	}
	return &SpanExporter{c: c}, nil
}

// ExportSpans sends spans in one request.
func (e *SpanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	return e.c.post(ctx, AppendTraces(nil, spans))
}

// Shutdown stops the exporter: later exports fail at once.
func (e *SpanExporter) Shutdown(ctx context.Context) error {
	e.c.stop()
	return ctx.Err()
}

// MetricExporter is an sdkmetric.Exporter posting to one /v1/metrics URL,
// with the SDK's default temporality (cumulative) and aggregations.
type MetricExporter struct{ c *client }

var _ metric.Exporter = (*MetricExporter)(nil)

// NewMetricExporter is NewSpanExporter's twin for the metrics endpoint.
func NewMetricExporter(endpoint string, headers map[string]string, hc *http.Client) (*MetricExporter, error) {
	c, err := newClient(endpoint, headers, hc)
	if err != nil {
		return nil, err
	}
	return &MetricExporter{c: c}, nil
}

// Temporality is the SDK's default: cumulative for every instrument.
func (e *MetricExporter) Temporality(k metric.InstrumentKind) metricdata.Temporality {
	return metric.DefaultTemporalitySelector(k)
}

// Aggregation is the SDK's default for each instrument kind.
func (e *MetricExporter) Aggregation(k metric.InstrumentKind) metric.Aggregation {
	return metric.DefaultAggregationSelector(k)
}

// Export sends rm in one request.
func (e *MetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	body, err := AppendMetrics(nil, rm)
	if err != nil {
		return fmt.Errorf("otlphttp: %w", err)
	}
	return e.c.post(ctx, body)
}

// ForceFlush has nothing to flush: every Export is sent before it returns.
func (e *MetricExporter) ForceFlush(ctx context.Context) error { return ctx.Err() }

// Shutdown stops the exporter: later exports fail at once.
func (e *MetricExporter) Shutdown(ctx context.Context) error {
	e.c.stop()
	return ctx.Err()
}
