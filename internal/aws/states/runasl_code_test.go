package states

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestRunStepCodeIsFollowed: the function a Step returns as its code is
// the one the next Step invokes (a pinned run's version), and a code
// whose function is gone (a retired version) goes back to the live one
// through Repoint instead of failing the run.
func TestRunStepCodeIsFollowed(t *testing.T) {
	keel := newFakeKeel(t,
		stepReply{d: decision{Next: "continue", Code: "keel-step:1"}}, // live sends the run to version 1
		reply("continue"), // version 1 keeps it
		stepReply{d: decision{Next: "continue", Code: "keel-step:0"}}, // a version that is gone
		reply("done"))
	var mu sync.Mutex
	var invoked []string
	lambdas := keel.lambdas()
	step := lambdas["keel-step"]
	for _, name := range []string{"keel-step", "keel-step:1"} {
		lambdas[name] = func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
			mu.Lock()
			invoked = append(invoked, name)
			mu.Unlock()
			return step(ctx, payload)
		}
	}
	env := newEnv(t, envOpts{clock: newFakeClock(false), lambdas: lambdas, tasks: keel})
	arn := env.register("keel-run", string(runASL(t)), runSubs)
	r := &runEnv{testEnv: env, keel: keel, arn: arn}
	ex := r.startRun("run-1")
	if d := r.waitDone(ex); d.Status != StatusSucceeded {
		t.Fatalf("status %s", d.Status)
	}
	wantPath(t, r.history(ex), "Init", "Step", "Count", "Route", "Step", "Count", "Route", "Step", "Count", "Route",
		"Step", "Repoint", "Step", "Count", "Route", "Finalize", "Outcome", "Done")
	if want := []string{"keel-step", "keel-step:1", "keel-step:1", "keel-step"}; !slices.Equal(invoked, want) {
		t.Fatalf("invoked %v, want %v", invoked, want)
	}
}

// TestRunStartsChildren: a Step that waits for child runs no one started
// names them; the state machine starts each (an execution named by the
// run id, fed {run_id, generation 0}) before it waits, and a child whose
// execution exists already is the same start, not a failure.
func TestRunStartsChildren(t *testing.T) {
	var mu sync.Mutex
	parentSteps := 0
	lambdas := newFakeKeel(t).lambdas()
	lambdas["keel-step"] = func(_ context.Context, payload json.RawMessage) (json.RawMessage, error) {
		var p struct {
			RunID string `json:"run_id"`
			Code  string `json:"code"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return nil, err
		}
		d := decision{Next: "done", Code: p.Code}
		mu.Lock()
		if p.RunID == "parent" {
			parentSteps++
			if parentSteps == 1 {
				d = decision{Next: "wait", Code: p.Code, Children: []string{"kid-a", "kid-b"}}
			}
		}
		mu.Unlock()
		return json.Marshal(d)
	}
	env := newEnv(t, envOpts{clock: newFakeClock(false), lambdas: lambdas})
	arn := env.register("keel-run", string(runASL(t)), runSubs)
	env.waitDone(env.start(arn, "kid-a", `{"run_id": "kid-a", "generation": 0}`)) // started already
	parent := env.start(arn, "parent", `{"run_id": "parent", "generation": 0}`)
	if d := env.waitDone(parent); d.Status != StatusSucceeded {
		t.Fatalf("parent %s", d.Status)
	}
	wantPath(t, env.history(parent), "Init", "Step", "Count", "Route", "StartChildren", "StartChild", "NextChild", "MoreChildren",
		"StartChild", "NextChild", "MoreChildren", "Wait", "Step", "Count", "Route", "Finalize", "Outcome", "Done")
	kid := strings.Replace(parent, ":parent", ":kid-b", 1)
	if d := env.waitDone(kid); d.Status != StatusSucceeded || !strings.Contains(d.Input, `"run_id":"kid-b"`) {
		t.Fatalf("kid-b: %s with input %s", d.Status, d.Input)
	}
}
