package otlphttp

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Span flags (opentelemetry.proto.trace.v1.SpanFlags): the parent's
// remoteness is always known here.
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// AppendTraces appends an ExportTraceServiceRequest of spans: one
// ResourceSpans per resource and one ScopeSpans per scope under it, in
// the order they first appear.
func AppendTraces(b []byte, spans []sdktrace.ReadOnlySpan) []byte {
	type group struct {
		res    *resource.Resource
		scopes []instrumentation.Scope
		spans  map[instrumentation.Scope][]sdktrace.ReadOnlySpan
	}
	var order []attribute.Distinct
	groups := map[attribute.Distinct]*group{}
	for _, s := range spans {
		if s == nil {
			continue
		}
		k := s.Resource().Equivalent()
		g, ok := groups[k]
		if !ok {
			g = &group{res: s.Resource(), spans: map[instrumentation.Scope][]sdktrace.ReadOnlySpan{}}
			groups[k] = g
			order = append(order, k)
		}
		sc := s.InstrumentationScope()
		if _, ok := g.spans[sc]; !ok {
			g.scopes = append(g.scopes, sc)
		}
		g.spans[sc] = append(g.spans[sc], s)
	}
	for _, k := range order {
		g := groups[k]
		b = appendMessage(b, 1, func(m []byte) []byte { // resource_spans
			if g.res != nil {
				m = appendMessage(m, 1, func(r []byte) []byte { return appendIter(r, 1, g.res.Iter()) })
			}
			for _, sc := range g.scopes {
				m = appendMessage(m, 2, func(ss []byte) []byte { // scope_spans
					if sc != (instrumentation.Scope{}) {
						ss = appendMessage(ss, 1, func(x []byte) []byte { return appendScope(x, sc) })
					}
					for _, s := range g.spans[sc] {
						ss = appendMessage(ss, 2, func(x []byte) []byte { return appendSpan(x, s) })
					}
					return appendString(ss, 3, sc.SchemaURL)
				})
			}
			if g.res != nil {
				m = appendString(m, 3, g.res.SchemaURL())
			}
			return m
		})
	}
	return b
}

func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	f := uint32(tf) | flagHasIsRemote
	if parent.IsRemote() {
		f |= flagIsRemote
	}
	return f
}

// statusCode maps the SDK's codes (Unset 0, Error 1, Ok 2) to OTLP's
// (UNSET 0, OK 1, ERROR 2).
func statusCode(c codes.Code) uint64 {
	switch c {
	case codes.Ok:
		return 1
	case codes.Error:
		return 2
	}
	return 0
}

func appendSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytes(b, 1, tid[:])
	b = appendBytes(b, 2, sid[:])
	b = appendString(b, 3, sc.TraceState().String())
	if p := s.Parent().SpanID(); p.IsValid() {
		b = appendBytes(b, 4, p[:])
	}
	b = appendString(b, 5, s.Name())
	// trace.SpanKind and OTLP's SpanKind share their numbers.
	if k := s.SpanKind(); k >= trace.SpanKindInternal && k <= trace.SpanKindConsumer {
		b = appendUvarint(b, 6, uint64(k))
	}
	b = appendFixed64(b, 7, unixNano(s.StartTime()))
	b = appendFixed64(b, 8, unixNano(s.EndTime()))
	b = appendKeyValues(b, 9, s.Attributes())
	b = appendUvarint(b, 10, clampUint32(s.DroppedAttributes()))
	for _, e := range s.Events() {
		b = appendMessage(b, 11, func(m []byte) []byte {
			m = appendFixed64(m, 1, unixNano(e.Time))
			m = appendString(m, 2, e.Name)
			m = appendKeyValues(m, 3, e.Attributes)
			return appendUvarint(m, 4, clampUint32(e.DroppedAttributeCount))
		})
	}
	b = appendUvarint(b, 12, clampUint32(s.DroppedEvents()))
	for _, l := range s.Links() {
		b = appendMessage(b, 13, func(m []byte) []byte {
			ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			m = appendBytes(m, 1, ltid[:])
			m = appendBytes(m, 2, lsid[:])
			m = appendKeyValues(m, 4, l.Attributes)
			m = appendUvarint(m, 5, clampUint32(l.DroppedAttributeCount))
			return appendFixed32(m, 6, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
		})
	}
	b = appendUvarint(b, 14, clampUint32(s.DroppedLinks()))
	st := s.Status()
	b = appendMessage(b, 15, func(m []byte) []byte {
		m = appendString(m, 2, st.Description)
		return appendUvarint(m, 3, statusCode(st.Code))
	})
	return appendFixed32(b, 16, spanFlags(sc.TraceFlags(), s.Parent()))
}
