package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/model/scripted"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// Define an agent (a model and its tools), store a run, and step it until a
// decision. Everything the Step learned is in the store when it returns.
func ExampleHarness_Step() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "keel-example-")
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "keel.db"), sqlite.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	reg, _ := tool.NewRegistry(&echo{})
	m, _ := scripted.Parse([]byte(`{"turns":[{"tool_calls":[{"name":"echo","args":{"text":"hello"}}]}],"final":"said hello"}`))
	agents := harness.AgentMap{"greeter": {Name: "greeter", Model: model.Direct(m), Tools: reg}}
	h, _ := harness.New(harness.Options{Store: st, Agents: agents, Owner: "example-worker"})

	r, _, _ := st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "s1", Owner: "me", Agent: "greeter",
		Request: "say hello", InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()})
	d, err := h.Step(ctx, r.ID, time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.Marshal(d)
	r, _ = st.GetRun(ctx, r.ID)
	fmt.Println(string(out))
	fmt.Println(r.Status, r.Output, r.StepCount)
	// Output:
	// {"next":"done","approval_id":"","wait_seconds":0,"approval_timeout_seconds":0,"error":"","children":null}
	// completed said hello 2
}
