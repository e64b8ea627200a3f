package otelkeel

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/keelrun/keel/internal/scrub"
)

// scrubExporter masks the configured secrets (Process.Secrets, and those
// added by Providers.Mask) in every exported span: its name, string
// attributes, events and status, before the exporter sends it.
type scrubExporter struct {
	sdktrace.SpanExporter
	secrets *atomic.Pointer[scrub.Secrets]
}

func (e scrubExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	s := *e.secrets.Load()
	if s.Len() == 0 {
		return e.SpanExporter.ExportSpans(ctx, spans)
	}
	out := make([]sdktrace.ReadOnlySpan, len(spans))
	for i, sp := range spans {
		out[i] = scrubbedSpan{ReadOnlySpan: sp, s: s}
	}
	return e.SpanExporter.ExportSpans(ctx, out)
}

// scrubbedSpan is a span as exported: the SDK's span with its text masked.
type scrubbedSpan struct {
	sdktrace.ReadOnlySpan
	s scrub.Secrets
}

func (sp scrubbedSpan) Name() string { return sp.s.String(sp.ReadOnlySpan.Name()) }

func (sp scrubbedSpan) Attributes() []attribute.KeyValue {
	return attrs(sp.s, sp.ReadOnlySpan.Attributes())
}

func (sp scrubbedSpan) Events() []sdktrace.Event {
	evs := sp.ReadOnlySpan.Events()
	out := make([]sdktrace.Event, len(evs))
	for i, ev := range evs {
		ev.Name = sp.s.String(ev.Name)
		ev.Attributes = attrs(sp.s, ev.Attributes)
		out[i] = ev
	}
	return out
}

func (sp scrubbedSpan) Status() sdktrace.Status {
	st := sp.ReadOnlySpan.Status()
	st.Description = sp.s.String(st.Description)
	return st
}

// attrs masks the string values of kvs (a new slice; kvs is the span's).
func attrs(s scrub.Secrets, kvs []attribute.KeyValue) []attribute.KeyValue {
	out := make([]attribute.KeyValue, len(kvs))
	for i, kv := range kvs {
		switch kv.Value.Type() {
		case attribute.STRING:
			kv = kv.Key.String(s.String(kv.Value.AsString()))
		case attribute.STRINGSLICE:
			vs := kv.Value.AsStringSlice()
			for j := range vs {
				vs[j] = s.String(vs[j])
			}
			kv = kv.Key.StringSlice(vs)
		}
		out[i] = kv
	}
	return out
}
