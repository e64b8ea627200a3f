package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// refusing is a provider that refuses every request with status before a
// stream starts, as a provider's client reports an HTTP error: request
// ids req_001, req_002, ... (A real provider's wire, end to end through
// the harness, is in package anthropic's TestClientErrorFailsRunAtOnce.)
type refusing struct {
	status int
	calls  atomic.Int64
}

func (r *refusing) Stream(context.Context, model.Request) (model.Stream, error) {
	n := r.calls.Add(1)
	return nil, &model.StatusError{Provider: "acme", Status: r.status, RequestID: fmt.Sprintf("req_%03d", n), Message: "invalid x-api-key"}
}

// A client error from the provider (a 4xx other than 429) is not retried
// by the transport, and must not be retried by the step either: the run
// fails after one call, and run_failed names the status, the provider
// and the provider's request id.
func TestModelClientErrorFailsRunAtOnce(t *testing.T) {
	for _, status := range []int{401, 400} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			e := newEnv(t)
			p := &refusing{status: status}
			m := model.NewTransport(p, model.TransportOptions{Provider: "acme",
				Sleep: func(context.Context, time.Duration) error { return nil }})
			reg, err := tool.NewRegistry()
			if err != nil {
				t.Fatal(err)
			}
			h := e.Harness(nil, harness.AgentMap{"a": {Name: "a", Model: m, Tools: reg, MaxTokens: 100}}, nil)
			r := e.CreateRun("a", "s1", nil)

			d, err := h.Step(e.Ctx, r.ID, time.Minute)
			if err != nil {
				t.Fatalf("step: %v (a client error must fail the run, not the step)", err)
			}
			if d.Next != harness.NextFailed {
				t.Fatalf("decision %+v, want failed", d)
			}
			if n := p.calls.Load(); n != 1 {
				t.Fatalf("the provider got %d requests, want 1", n)
			}
			if got := e.GetRun(r.ID); got.Status != run.StatusFailed {
				t.Fatalf("run is %s, want failed", got.Status)
			}
			evs := e.CheckGapless(r.ID)
			last := evs[len(evs)-1]
			if last.Type != run.EventRunFailed {
				t.Fatalf("last event %s, want run_failed", last.Type)
			}
			var data struct {
				Status    int    `json:"status"`
				RequestID string `json:"request_id"`
				Provider  string `json:"provider"`
			}
			if err := json.Unmarshal(last.Data, &data); err != nil {
				t.Fatal(err)
			}
			if data.Status != status || data.RequestID != "req_001" || data.Provider != "acme" {
				t.Fatalf("run_failed data %s: want status %d, request id req_001, provider acme", last.Data, status)
			}
		})
	}
}
