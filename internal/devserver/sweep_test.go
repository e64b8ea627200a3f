package devserver_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/keelrun/keel/examples/research"
	"github.com/keelrun/keel/examples/research/researchtest"
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/devserver"
	"github.com/keelrun/keel/internal/run"
)

// A run stored by an earlier keel dev that died before starting it (issue
// #18, finding 5) is started by the sweep at the next start, without
// waiting for the run to age, and the repair is in its log.
func TestSweepAtStartStartsStoredRun(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg, err := config.FromEnv(func(k string) string { return map[string]string{"KEEL_DATA_DIR": dir}[k] })
	if err != nil {
		t.Fatal(err)
	}
	rt, err := compose.Open(ctx, cfg, researchtest.App(research.DirPublisher{Dir: filepath.Join(dir, "published")}), compose.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	r := run.Run{ID: run.NewID("run"), SessionID: "s", Owner: "dev", Agent: research.AgentName, Request: "Durable agents",
		InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()}
	if _, _, err := rt.Store.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	srv, err := devserver.Start(ctx, devserver.Config{DataDir: dir, Addr: "127.0.0.1:0", Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	deadline := time.Now().Add(time.Minute) // a bound on a hang, not a timing assertion
	for {
		got, err := rt.Store.GetRun(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == run.StatusAwaitingApproval {
			break
		}
		if got.Status.Terminal() || time.Now().After(deadline) {
			t.Fatalf("run %s (%s): the sweep at start did not start it", got.Status, got.Error)
		}
		time.Sleep(20 * time.Millisecond)
	}
	evs, err := rt.Store.ReadEvents(ctx, r.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	swept := 0
	for _, e := range evs {
		if e.Type == run.EventRunSwept {
			swept++
		}
	}
	if swept != 1 {
		t.Fatalf("%d run_swept events, want 1", swept)
	}
	if rep, err := srv.Sweep(ctx); err != nil || len(rep.Repairs) != 0 {
		t.Fatalf("a second sweep: %+v %v", rep, err)
	}
}
