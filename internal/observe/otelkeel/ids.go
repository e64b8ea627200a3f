package otelkeel

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"
	"sync"

	"go.opentelemetry.io/otel/trace"
)

// ids is the SDK's ID generator, with one addition: a root span started
// under withIDs gets the trace and span id given there. That is how the
// run's root span (keel.run), written when the run ends, takes the ids
// its trace context named at creation, so the Steps' spans hang from it.
type ids struct {
	mu  sync.Mutex
	rng *rand.ChaCha8
}

func newIDs() *ids {
	var seed [32]byte
	_, _ = crand.Read(seed[:])
	return &ids{rng: rand.NewChaCha8(seed)}
}

type forcedIDs struct{}

type forced struct {
	tid trace.TraceID
	sid trace.SpanID
}

func withIDs(ctx context.Context, tid trace.TraceID, sid trace.SpanID) context.Context {
	return context.WithValue(ctx, forcedIDs{}, forced{tid, sid})
}

// NewIDs implements sdktrace.IDGenerator.
func (g *ids) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if f, ok := ctx.Value(forcedIDs{}).(forced); ok && f.tid.IsValid() && f.sid.IsValid() {
		return f.tid, f.sid
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var tid trace.TraceID
	var sid trace.SpanID
	for !tid.IsValid() {
		binary.NativeEndian.PutUint64(tid[:8], g.rng.Uint64())
		binary.NativeEndian.PutUint64(tid[8:], g.rng.Uint64())
	}
	for !sid.IsValid() {
		binary.NativeEndian.PutUint64(sid[:], g.rng.Uint64())
	}
	return tid, sid
}

// NewSpanID implements sdktrace.IDGenerator.
func (g *ids) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	g.mu.Lock()
	defer g.mu.Unlock()
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.NativeEndian.PutUint64(sid[:], g.rng.Uint64())
	}
	return sid
}
