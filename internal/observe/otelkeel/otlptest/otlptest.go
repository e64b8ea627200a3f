// Package otlptest is an OTLP/HTTP receiver for tests: a real HTTP server
// that accepts POST /v1/traces and /v1/metrics with protobuf payloads (as
// otlptracehttp and otlpmetrichttp send them), decodes them with the OTLP
// protobuf definitions and keeps what arrived. Tests point the
// OTEL_EXPORTER_OTLP_ENDPOINT of an in-process SDK or of a child process
// at [Receiver.URL] and check what went over the wire.
package otlptest

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"

	colmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is a received span, flattened.
type Span struct {
	Name                  string
	TraceID, SpanID       string // hex
	ParentSpanID          string // hex, "" for a root
	Kind                  string
	Attrs                 map[string]any
	Resource              map[string]any
	StatusCode, StatusMsg string
	Events                []string
	StartNanos, EndNanos  uint64
}

// Receiver is the test's OTLP/HTTP endpoint.
type Receiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	spans   []Span
	metrics map[string]int // name → data points received
	metricA map[string][]map[string]any
	raw     [][]byte // every decoded payload, for secret greps
	bad     []string
}

// New starts a receiver on 127.0.0.1; it is closed with the test.
func New(t interface{ Cleanup(func()) }) *Receiver {
	r := &Receiver{metrics: map[string]int{}, metricA: map[string][]map[string]any{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

// URL is the base endpoint: the value of OTEL_EXPORTER_OTLP_ENDPOINT.
func (r *Receiver) URL() string { return r.srv.URL }

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := readBody(req)
	if err == nil && req.Method != http.MethodPost {
		err = fmt.Errorf("method %s", req.Method)
	}
	if err == nil && req.Header.Get("Content-Type") != "application/x-protobuf" {
		err = fmt.Errorf("content type %q", req.Header.Get("Content-Type"))
	}
	var resp proto.Message
	if err == nil {
		switch req.URL.Path {
		case "/v1/traces":
			var m coltrace.ExportTraceServiceRequest
			if err = proto.Unmarshal(body, &m); err == nil {
				r.addTraces(&m, body)
				resp = &coltrace.ExportTraceServiceResponse{}
			}
		case "/v1/metrics":
			var m colmetric.ExportMetricsServiceRequest
			if err = proto.Unmarshal(body, &m); err == nil {
				r.addMetrics(&m, body)
				resp = &colmetric.ExportMetricsServiceResponse{}
			}
		default:
			err = fmt.Errorf("path %s", req.URL.Path)
		}
	}
	if err != nil {
		r.mu.Lock()
		r.bad = append(r.bad, err.Error())
		r.mu.Unlock()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func readBody(req *http.Request) ([]byte, error) {
	var rd io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			return nil, err
		}
		rd = zr
	}
	return io.ReadAll(io.LimitReader(rd, 64<<20))
}

func (r *Receiver) addTraces(m *coltrace.ExportTraceServiceRequest, raw []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.raw = append(r.raw, bytes.Clone(raw))
	for _, rs := range m.ResourceSpans {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := Span{Name: s.Name, TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId),
					ParentSpanID: hex.EncodeToString(s.ParentSpanId), Kind: s.Kind.String(), Attrs: attrs(s.Attributes), Resource: res,
					StatusCode: s.GetStatus().GetCode().String(), StatusMsg: s.GetStatus().GetMessage(),
					StartNanos: s.StartTimeUnixNano, EndNanos: s.EndTimeUnixNano}
				for _, e := range s.Events {
					sp.Events = append(sp.Events, e.Name)
				}
				r.spans = append(r.spans, sp)
			}
		}
	}
}

func (r *Receiver) addMetrics(m *colmetric.ExportMetricsServiceRequest, raw []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.raw = append(r.raw, bytes.Clone(raw))
	for _, rm := range m.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, mt := range sm.Metrics {
				var pts []map[string]any
				for _, dp := range mt.GetSum().GetDataPoints() {
					a := attrs(dp.Attributes)
					a["_value"] = dp.GetAsInt() + int64(dp.GetAsDouble())
					pts = append(pts, a)
				}
				for _, dp := range mt.GetHistogram().GetDataPoints() {
					a := attrs(dp.Attributes)
					a["_count"] = int64(dp.Count)
					a["_sum"] = dp.GetSum()
					pts = append(pts, a)
				}
				for _, dp := range mt.GetGauge().GetDataPoints() {
					pts = append(pts, attrs(dp.Attributes))
				}
				r.metrics[mt.Name] += len(pts)
				r.metricA[mt.Name] = append(r.metricA[mt.Name], pts...)
			}
		}
	}
}

func attrs(kvs []*common.KeyValue) map[string]any {
	out := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *common.AnyValue_StringValue:
			out[kv.Key] = x.StringValue
		case *common.AnyValue_IntValue:
			out[kv.Key] = x.IntValue
		case *common.AnyValue_BoolValue:
			out[kv.Key] = x.BoolValue
		case *common.AnyValue_DoubleValue:
			out[kv.Key] = x.DoubleValue
		case *common.AnyValue_ArrayValue:
			var arr []any
			for _, e := range x.ArrayValue.GetValues() {
				arr = append(arr, e.GetStringValue())
			}
			out[kv.Key] = arr
		default:
			out[kv.Key] = v.String()
		}
	}
	return out
}

// Spans returns every span received so far, in arrival order.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Named returns the received spans whose name is name.
func (r *Receiver) Named(name string) []Span {
	var out []Span
	for _, s := range r.Spans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// MetricPoints returns the data points received for a metric, each as its
// attributes plus _value (sums) or _count and _sum (histograms).
func (r *Receiver) MetricPoints(name string) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]any(nil), r.metricA[name]...)
}

// MetricNames returns the names of every metric received, sorted.
func (r *Receiver) MetricNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for n := range r.metrics {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Payloads returns every payload received, decoded from gzip but still
// protobuf: a test greps them for what must never be exported.
func (r *Receiver) Payloads() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.raw...)
}

// Refused returns the requests the receiver could not accept (wrong path,
// content type or payload): a test expects none.
func (r *Receiver) Refused() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bad...)
}
