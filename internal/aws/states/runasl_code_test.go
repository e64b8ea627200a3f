package states

import (
	"context"
	"encoding/json"
	"slices"
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
