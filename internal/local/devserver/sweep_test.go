package devserver_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/aws/states"
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/fixture"
	"github.com/keelrun/keel/internal/fixture/fixturetest"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/local/devserver"
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
	rt, err := compose.Open(ctx, cfg, fixturetest.App(fixture.DirPublisher{Dir: filepath.Join(dir, "published")}), compose.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	r := run.Run{ID: run.NewID("run"), SessionID: "s", Owner: "dev", Agent: fixture.AgentName, Request: "Durable agents",
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

// The StopExecution wedge of issue #18 (finding 1's "restarts change
// nothing"): the execution of a run waiting for approval is stopped while
// keel dev is down. At the next start the sweep resumes the run in a new
// generation, which asks again; approving through the API completes it.
func TestSweepAtStartResumesStoppedExecution(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	app := fixturetest.App(fixture.DirPublisher{Dir: filepath.Join(dir, "published")})
	open := func() *compose.Runtime {
		cfg, err := config.FromEnv(func(k string) string { return map[string]string{"KEEL_DATA_DIR": dir}[k] })
		if err != nil {
			t.Fatal(err)
		}
		rt, err := compose.Open(ctx, cfg, app, compose.Backends{})
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}
	waitFor := func(rt *compose.Runtime, id string, cond func(run.Run, run.Approval) bool) run.Approval {
		t.Helper()
		deadline := time.Now().Add(time.Minute) // a bound on a hang, not a timing assertion
		for {
			r, err := rt.Store.GetRun(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			aps, err := rt.Store.ListApprovals(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var ap run.Approval
			if len(aps) > 0 {
				ap = aps[0]
			}
			if cond(r, ap) {
				return ap
			}
			if time.Now().After(deadline) {
				t.Fatalf("gave up: run %s, approval %+v", r.Status, ap.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	rt := open()
	r := run.Run{ID: run.NewID("run"), SessionID: "s", Owner: "dev", Agent: fixture.AgentName, Request: "Durable agents",
		InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()}
	if _, _, err := rt.Store.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	srv, err := devserver.Start(ctx, devserver.Config{DataDir: dir, Addr: "127.0.0.1:0", Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	old := waitFor(rt, r.ID, func(_ run.Run, ap run.Approval) bool { return ap.TaskToken != "" })
	srv.Close()

	// While keel dev is down, the execution is stopped (as anyone reaching
	// the local Step Functions endpoint could).
	rt = open()
	sfnStore, err := states.NewStore(ctx, rt.SQLite.DB())
	if err != nil {
		t.Fatal(err)
	}
	ex, err := states.New(states.Config{Store: sfnStore})
	if err != nil {
		t.Fatal(err)
	}
	arn := strings.Replace(ex.StateMachineARN("keel-run"), ":stateMachine:", ":execution:", 1) + ":" + r.ID
	if _, err := ex.StopExecution(ctx, arn, "Test.Stopped", "stopped while keel dev was down"); err != nil {
		t.Fatal(err)
	}

	srv, err = devserver.Start(ctx, devserver.Config{DataDir: dir, Addr: "127.0.0.1:0", Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ap := waitFor(rt, r.ID, func(_ run.Run, ap run.Approval) bool { return ap.TaskToken != "" && ap.TaskToken != old.TaskToken })
	body := fmt.Sprintf(`{"decision":"approve","args_hash":%q}`, ap.ArgsHash)
	req, _ := http.NewRequest("POST", srv.URL+"/v1/runs/"+r.ID+"/approvals/"+ap.ID, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+srv.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("approve: %d", resp.StatusCode)
	}
	waitFor(rt, r.ID, func(r run.Run, _ run.Approval) bool {
		if r.Status.Terminal() && r.Status != run.StatusCompleted {
			t.Fatalf("run ended %s: %s", r.Status, r.Error)
		}
		return r.Status == run.StatusCompleted
	})
	pubs, _ := filepath.Glob(filepath.Join(dir, "published", "*.md"))
	if len(pubs) != 1 {
		t.Fatalf("%d publications, want 1", len(pubs))
	}
}
