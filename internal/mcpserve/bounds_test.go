package mcpserve_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/mcpserve"
)

// bigLog answers Events from a log of n events of size bytes of data
// each, and counts Settle calls; the rest of Keel is not used here.
type bigLog struct {
	mcpserve.Keel
	n, size int
	settled int
	// most is the most events one Events call was asked for.
	most int
}

func (b *bigLog) Events(_ context.Context, _ string, after int64, limit int) (api.EventPage, error) {
	b.most = max(b.most, limit)
	p := api.EventPage{NextAfter: after, Status: run.StatusCompleted}
	data, _ := json.Marshal(map[string]string{"note": strings.Repeat("x", b.size)})
	for seq := after + 1; seq <= int64(b.n) && len(p.Events) < limit; seq++ {
		p.Events = append(p.Events, api.Event{Seq: seq, Type: run.EventToolCompleted, Data: data})
		p.NextAfter = seq
	}
	p.Done = p.NextAfter == int64(b.n)
	return p, nil
}

func (b *bigLog) Settle(context.Context, string, string, api.SettleRequest) (api.Run, error) {
	b.settled++
	return api.Run{}, nil
}

func inMemory(t *testing.T, k mcpserve.Keel) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := mcpserve.New(k, mcpserve.Options{AllowDecisions: true}).Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "ide", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestRunEventsBounded: a log whose 200 events hold 40 KB each (8 MB in
// one page of the API) is read through run_events in answers that each
// stay under 4 MiB, the deployed API's answer limit, and that together
// hold every event once; an event larger than the bound on its own comes
// with its data replaced by a note, and the log still reaches its end.
func TestRunEventsBounded(t *testing.T) {
	for _, c := range []struct {
		name    string
		n, size int
	}{
		{"200 events of 40 KB", 200, 40 << 10},
		{"one event of 3 MB", 3, 3 << 20},
		{"500 small events", 500, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := &bigLog{n: c.n, size: c.size}
			cs := inMemory(t, k)
			var after int64
			seen, answers := 0, 0
			for {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_events", Arguments: map[string]any{"run_id": "run_x", "after": after}})
				if err != nil || res.IsError {
					t.Fatalf("run_events: %v %+v", err, res)
				}
				text := res.Content[0].(*mcp.TextContent).Text
				if b, _ := json.Marshal(res); len(b) >= 4<<20 {
					t.Fatalf("an answer of %d bytes, over 4 MiB", len(b))
				}
				var p api.EventPage
				if err := json.Unmarshal([]byte(text), &p); err != nil {
					t.Fatal(err)
				}
				for _, e := range p.Events {
					if e.Seq != after+1 {
						t.Fatalf("event %d after %d: a page skipped or repeated events", e.Seq, after)
					}
					after = e.Seq
					seen++
				}
				answers++
				if p.Done {
					break
				}
				if len(p.Events) == 0 || answers > 1000 {
					t.Fatalf("no progress after %d answers at %d", answers, after)
				}
			}
			if seen != c.n {
				t.Errorf("read %d events, want %d", seen, c.n)
			}
			if k.most >= mcpserve.MaxEvents {
				t.Errorf("run_events read %d events from the API at once: a page of large events is read whole before it is cut", k.most)
			}
			t.Logf("%d events of %d bytes in %d answers, at most %d read at once", c.n, c.size, answers, k.most)
		})
	}
}

// TestSettleNeedsAReason: settle_operation without a reason is refused
// before it reaches the API ("via MCP: " alone is no reason).
func TestSettleNeedsAReason(t *testing.T) {
	k := &bigLog{}
	cs := inMemory(t, k)
	for _, reason := range []string{"", "   "} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "settle_operation", Arguments: map[string]any{
			"run_id": "run_x", "operation_id": "op_1", "outcome": "happened", "reason": reason}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "reason is required") {
			t.Errorf("reason %q: %+v, want refused naming the reason", reason, res.Content)
		}
	}
	if k.settled != 0 {
		t.Errorf("%d settles reached the API without a reason", k.settled)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "settle_operation", Arguments: map[string]any{
		"run_id": "run_x", "operation_id": "op_1", "outcome": "happened", "reason": "the record is gone"}}); err != nil || k.settled != 1 {
		t.Errorf("a settle with a reason: %v, %d settles", err, k.settled)
	}
}
