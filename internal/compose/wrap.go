package compose

// Wrappers the runtime puts around an agent's tools and model: delays and
// spill marks from the configuration, and the fault points of the crash
// suite.

import (
	"context"
	"fmt"
	"time"

	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// delayed holds a read-only tool before it runs, honouring cancellation.
type delayed struct {
	tool.Tool
	d time.Duration
}

func (t delayed) Run(ctx context.Context, c tool.Call) (tool.Result, error) {
	select {
	case <-time.After(t.d):
	case <-ctx.Done():
		return tool.Result{}, ctx.Err()
	}
	return t.Tool.Run(ctx, c)
}

// MarkLong marks t as a tool that may outlive a bounded step: a run about
// to call it spills to the long-running task first.
func MarkLong(t tool.Tool) tool.Tool {
	if e, ok := t.(tool.Effectful); ok {
		return longEffect{e}
	}
	return long{t}
}

type long struct{ tool.Tool }

func (l long) Info() tool.Info { i := l.Tool.Info(); i.Long = true; return i }

type longEffect struct{ tool.Effectful }

func (l longEffect) Info() tool.Info { i := l.Effectful.Info(); i.Long = true; return i }

// wrapTools applies KEEL_SPILL_TOOLS and KEEL_TOOL_DELAY to one agent's
// tools (names the agent does not have are checked across agents).
func wrapTools(tools []tool.Tool, spill []string, delay map[string]time.Duration) ([]tool.Tool, error) {
	want := map[string]bool{}
	for _, n := range spill {
		want[n] = true
	}
	out := make([]tool.Tool, 0, len(tools))
	for _, t := range tools {
		n := t.Info().Name
		_, isEffect := t.(tool.Effectful)
		if d, ok := delay[n]; ok {
			if isEffect {
				return nil, fmt.Errorf("KEEL_TOOL_DELAY: %q has an external effect; only read-only tools can be delayed", n)
			}
			t = delayed{Tool: t, d: d}
		}
		if want[n] {
			t = MarkLong(t)
		}
		out = append(out, t)
	}
	return out, nil
}

// faultStreamer hits the in_model_stream fault point after the first chunk
// of every stream: a process killed there dies with a model answer half
// received.
type faultStreamer struct {
	s      model.Streamer
	faults harness.FaultPoints
}

func (f faultStreamer) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	st, err := f.s.Stream(ctx, req)
	if err != nil {
		return nil, err
	}
	return &faultStream{Stream: st, faults: f.faults}, nil
}

type faultStream struct {
	model.Stream
	faults harness.FaultPoints
	n      int
}

func (f *faultStream) Next() (model.Chunk, error) {
	c, err := f.Stream.Next()
	f.n++
	if f.n == 2 {
		f.faults.Hit(harness.FaultInModelStream)
	}
	return c, err
}
