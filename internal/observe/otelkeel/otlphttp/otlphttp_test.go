package otlphttp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	colmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/keelrun/keel/internal/observe/otelkeel/otlphttp"
)

// capture is an OTLP/HTTP endpoint that keeps every request.
type capture struct {
	srv *httptest.Server
	mu  sync.Mutex
	req []*http.Request
	got [][]byte
	// reply answers request n (from 0); nil: 200.
	reply func(n int, w http.ResponseWriter) bool
}

func newCapture(t *testing.T) *capture {
	c := &capture{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		n := len(c.got)
		c.req, c.got = append(c.req, r), append(c.got, b)
		reply := c.reply
		c.mu.Unlock()
		if reply != nil && reply(n, w) {
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *capture) last(t *testing.T) (*http.Request, []byte) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.got) == 0 {
		t.Fatal("nothing was sent")
	}
	return c.req[len(c.req)-1], c.got[len(c.got)-1]
}

func spans() []sdktrace.ReadOnlySpan {
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.38.0",
		attribute.String("service.name", "keel"), attribute.String("keel.role", "step"))
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	root := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{1, 1, 1, 1, 1, 1, 1, 1}, TraceFlags: trace.FlagsSampled})
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{9, 9, 9, 9, 9, 9, 9, 9}, TraceFlags: trace.FlagsSampled, Remote: true})
	ts, _ := trace.ParseTraceState("keel=1,vendor=x")
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 123456789, time.UTC)
	harness := instrumentation.Scope{Name: "github.com/keelrun/keel/harness", Version: "0.1.0", SchemaURL: "https://opentelemetry.io/schemas/1.38.0",
		Attributes: attribute.NewSet(attribute.String("scope.attr", "x"))}
	return tracetest.SpanStubs{
		{
			Name: "invoke_agent research", SpanContext: root, Parent: remote, SpanKind: trace.SpanKindServer,
			StartTime: t0, EndTime: t0.Add(1500 * time.Millisecond), Resource: res, InstrumentationScope: harness,
			Attributes: []attribute.KeyValue{
				attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.Int64("keel.step", 0), attribute.Int64("keel.n", -7),
				attribute.Bool("keel.ok", true), attribute.Bool("keel.no", false), attribute.Float64("keel.f", 2.5), attribute.Float64("keel.zero", 0),
				attribute.StringSlice("keel.tools", []string{"search", "fetch"}), attribute.Int64Slice("keel.ints", []int64{1, 0, -2}),
				attribute.BoolSlice("keel.bools", []bool{true, false}), attribute.Float64Slice("keel.floats", []float64{0.5, 0}),
				attribute.String("keel.empty", ""),
			},
			Events: []sdktrace.Event{
				{Name: "gen_ai.choice", Time: t0.Add(time.Second), Attributes: []attribute.KeyValue{attribute.String("finish_reason", "tool_use")}, DroppedAttributeCount: 2},
				{Name: "bare", Time: t0.Add(1100 * time.Millisecond)},
			},
			Links:             []sdktrace.Link{{SpanContext: remote, Attributes: []attribute.KeyValue{attribute.String("link", "previous")}, DroppedAttributeCount: 1}},
			Status:            sdktrace.Status{Code: codes.Error, Description: "tool failed"},
			DroppedAttributes: 3, DroppedEvents: 4, DroppedLinks: 5, ChildSpanCount: 1,
		},
		{
			Name: "execute_tool search", SpanKind: trace.SpanKindInternal, Resource: res, InstrumentationScope: harness,
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{2, 2, 2, 2, 2, 2, 2, 2}, TraceFlags: trace.FlagsSampled, TraceState: ts}),
			Parent:      root, StartTime: t0.Add(100 * time.Millisecond), EndTime: t0.Add(900 * time.Millisecond),
			Status: sdktrace.Status{Code: codes.Ok},
		},
		{
			// Another scope (an empty one: no scope message) and no status.
			Name: "store.commit", SpanKind: trace.SpanKindClient, Resource: res,
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{3, 3, 3, 3, 3, 3, 3, 3}}),
			Parent:      root, StartTime: t0.Add(950 * time.Millisecond), EndTime: t0.Add(960 * time.Millisecond),
		},
	}.Snapshots()
}

// TestTracesMatchTheOfficialExporter sends the same spans through
// otlptracehttp and through this package, decodes both payloads with the
// generated OTLP types, and requires them equal.
func TestTracesMatchTheOfficialExporter(t *testing.T) {
	ctx := context.Background()
	in := spans()
	off, mine := newCapture(t), newCapture(t)
	official, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(off.srv.URL+"/v1/traces"), otlptracehttp.WithHeaders(map[string]string{"x-team": "keel"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := official.ExportSpans(ctx, in); err != nil {
		t.Fatal(err)
	}
	exp, err := otlphttp.NewSpanExporter(mine.srv.URL+"/v1/traces", map[string]string{"x-team": "keel"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(ctx, in); err != nil {
		t.Fatal(err)
	}
	oreq, obody := off.last(t)
	mreq, mbody := mine.last(t)
	var want, got coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(obody, &want); err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(mbody, &got); err != nil {
		t.Fatalf("our payload does not decode: %v", err)
	}
	if len(want.ResourceSpans) != 1 || len(want.ResourceSpans[0].ScopeSpans) != 2 {
		t.Fatalf("the official payload is not the shape this test expects:\n%s", prototext.Format(&want))
	}
	if !proto.Equal(&want, &got) {
		t.Fatalf("payloads differ\nofficial:\n%s\nours:\n%s", prototext.Format(&want), prototext.Format(&got))
	}
	for _, h := range []string{"Content-Type", "X-Team"} {
		if oreq.Header.Get(h) != mreq.Header.Get(h) {
			t.Errorf("header %s = %q, official %q", h, mreq.Header.Get(h), oreq.Header.Get(h))
		}
	}
	if mreq.URL.Path != "/v1/traces" || mreq.Method != http.MethodPost {
		t.Errorf("request = %s %s", mreq.Method, mreq.URL.Path)
	}
}

func metrics() *metricdata.ResourceMetrics {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	a := attribute.NewSet(attribute.String("gen_ai.agent.name", "research"), attribute.String("keel.decision", "continue"))
	b := attribute.NewSet(attribute.String("gen_ai.token.type", "input"))
	ex := []metricdata.Exemplar[float64]{{FilteredAttributes: []attribute.KeyValue{attribute.String("tool", "search")}, Time: t1, Value: 0.25,
		SpanID: []byte{2, 2, 2, 2, 2, 2, 2, 2}, TraceID: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}}}
	return &metricdata.ResourceMetrics{
		Resource: resource.NewWithAttributes("https://opentelemetry.io/schemas/1.38.0", attribute.String("service.name", "keel")),
		ScopeMetrics: []metricdata.ScopeMetrics{
			{
				Scope: instrumentation.Scope{Name: "github.com/keelrun/keel", Version: "0.1.0"},
				Metrics: []metricdata.Metrics{
					{Name: "keel.steps", Description: "Steps run.", Unit: "{step}", Data: metricdata.Sum[int64]{
						Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
						DataPoints: []metricdata.DataPoint[int64]{{Attributes: a, StartTime: t0, Time: t1, Value: 12}, {Attributes: b, StartTime: t0, Time: t1, Value: 0}}}},
					{Name: "keel.approvals.pending", Data: metricdata.Sum[int64]{Temporality: metricdata.DeltaTemporality,
						DataPoints: []metricdata.DataPoint[int64]{{StartTime: t0, Time: t1, Value: -1}}}},
					{Name: "keel.f", Data: metricdata.Sum[float64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
						DataPoints: []metricdata.DataPoint[float64]{{Attributes: a, StartTime: t0, Time: t1, Value: 1.5, Exemplars: ex}}}},
					{Name: "keel.gauge", Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{{Time: t1, Value: 3}}}},
					{Name: "keel.gauge.f", Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{{Time: t1, Value: 0}}}},
					{Name: "keel.tool.duration", Unit: "s", Data: metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality,
						DataPoints: []metricdata.HistogramDataPoint[float64]{{Attributes: a, StartTime: t0, Time: t1, Count: 3,
							Bounds: []float64{0, 0.5, 1, 5}, BucketCounts: []uint64{0, 2, 0, 1, 0}, Min: metricdata.NewExtrema(0.1), Max: metricdata.NewExtrema(4.0),
							Sum: 4.6, Exemplars: ex}}}},
					{Name: "gen_ai.client.token.usage", Unit: "{token}", Data: metricdata.Histogram[int64]{Temporality: metricdata.DeltaTemporality,
						DataPoints: []metricdata.HistogramDataPoint[int64]{{Attributes: b, StartTime: t0, Time: t1, Count: 0, Bounds: []float64{1, 4}, BucketCounts: []uint64{0, 0, 0}}}}},
				},
			},
			{
				Scope: instrumentation.Scope{Name: "other", SchemaURL: "https://opentelemetry.io/schemas/1.38.0"},
				Metrics: []metricdata.Metrics{
					{Name: "exp", Data: metricdata.ExponentialHistogram[float64]{Temporality: metricdata.CumulativeTemporality,
						DataPoints: []metricdata.ExponentialHistogramDataPoint[float64]{{Attributes: a, StartTime: t0, Time: t1, Count: 5, Sum: 7.5, Scale: -2, ZeroCount: 1,
							PositiveBucket: metricdata.ExponentialBucket{Offset: -3, Counts: []uint64{1, 0, 3}}, Min: metricdata.NewExtrema(-1.0), Max: metricdata.NewExtrema(6.0)}}}},
					{Name: "summary", Data: metricdata.Summary{DataPoints: []metricdata.SummaryDataPoint{{StartTime: t0, Time: t1, Count: 2, Sum: 3,
						QuantileValues: []metricdata.QuantileValue{{Quantile: 0, Value: 1}, {Quantile: 1, Value: 2}}}}}},
				},
			},
		},
	}
}

// TestMetricsMatchTheOfficialExporter is the traces test's twin for
// otlpmetrichttp, over every aggregation the SDK produces.
func TestMetricsMatchTheOfficialExporter(t *testing.T) {
	ctx := context.Background()
	off, mine := newCapture(t), newCapture(t)
	official, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(off.srv.URL+"/v1/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	if err := official.Export(ctx, metrics()); err != nil {
		t.Fatal(err)
	}
	exp, err := otlphttp.NewMetricExporter(mine.srv.URL+"/v1/metrics", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.Export(ctx, metrics()); err != nil {
		t.Fatal(err)
	}
	_, obody := off.last(t)
	_, mbody := mine.last(t)
	var want, got colmetric.ExportMetricsServiceRequest
	if err := proto.Unmarshal(obody, &want); err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(mbody, &got); err != nil {
		t.Fatalf("our payload does not decode: %v", err)
	}
	if n := len(want.ResourceMetrics[0].ScopeMetrics[0].Metrics); n != 7 {
		t.Fatalf("the official payload has %d metrics in the first scope, want 7:\n%s", n, prototext.Format(&want))
	}
	if !proto.Equal(&want, &got) {
		t.Fatalf("payloads differ\nofficial:\n%s\nours:\n%s", prototext.Format(&want), prototext.Format(&got))
	}
}

// TestRetries: 503 and 429 are retried (Retry-After honoured), 400 is not,
// and an error names the status but never the body the collector sent.
func TestRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		statuses []int // the answers, in order; then 200
		wantReqs int
		wantErr  string
	}{
		{name: "503 then 200", statuses: []int{503}, wantReqs: 2},
		{name: "429, 502, 504 then 200", statuses: []int{429, 502, 504}, wantReqs: 4},
		{name: "400 is not retried", statuses: []int{400}, wantReqs: 1, wantErr: "HTTP 400"},
		{name: "gives up after 5 attempts", statuses: []int{503, 503, 503, 503, 503, 503}, wantReqs: 5, wantErr: "HTTP 503"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCapture(t)
			c.reply = func(n int, w http.ResponseWriter) bool {
				if n >= len(tc.statuses) {
					return false
				}
				w.Header().Set("Retry-After", "0.001")
				w.WriteHeader(tc.statuses[n])
				_, _ = io.WriteString(w, "collector says: secret-token-0123456789")
				return true
			}
			exp, err := otlphttp.NewSpanExporter(c.srv.URL+"/v1/traces", map[string]string{"Authorization": "Bearer secret-token-0123456789"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = exp.ExportSpans(context.Background(), spans())
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "secret-token") {
				t.Fatalf("the error carries the collector's body or a header: %v", err)
			}
			c.mu.Lock()
			n := len(c.got)
			auth := c.req[0].Header.Get("Authorization")
			c.mu.Unlock()
			if n != tc.wantReqs {
				t.Fatalf("requests = %d, want %d", n, tc.wantReqs)
			}
			if auth != "Bearer secret-token-0123456789" {
				t.Fatalf("Authorization = %q: the configured headers were not sent", auth)
			}
		})
	}
}

// After Shutdown an export fails at once; a bad endpoint fails at
// construction, naming it.
func TestShutdownAndEndpoint(t *testing.T) {
	c := newCapture(t)
	exp, err := otlphttp.NewMetricExporter(c.srv.URL+"/v1/metrics", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := exp.Export(context.Background(), metrics()); err == nil {
		t.Fatal("an export after Shutdown succeeded")
	}
	for _, u := range []string{"", "localhost:4318/v1/traces", "ftp://x/v1/traces"} {
		if _, err := otlphttp.NewSpanExporter(u, nil, nil); err == nil || !strings.Contains(err.Error(), "endpoint") {
			t.Errorf("endpoint %q: err = %v", u, err)
		}
	}
}
