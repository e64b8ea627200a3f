package upgrade

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/kernel/run"
)

// waitRun polls the run until ok says so; ctx is the hang guard.
func waitRun(ctx context.Context, t *testing.T, c *client.Client, id string, ok func(api.Run) bool) api.Run {
	t.Helper()
	for {
		r, err := c.GetRun(ctx, id)
		if err == nil && ok(r) {
			return r
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run %s: %v (last: %+v, err %v)", id, ctx.Err(), r, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func status(s ...run.Status) func(api.Run) bool {
	return func(r api.Run) bool {
		for _, x := range s {
			if r.Status == x {
				return true
			}
		}
		return false
	}
}

// awaitingApproval starts a run on d and waits for its approval of publish.
func awaitingApproval(ctx context.Context, t *testing.T, d *dev) (api.Run, api.Approval) {
	t.Helper()
	r, _, err := d.c.CreateRun(ctx, api.CreateRunRequest{Agent: "publisher", Input: "publish the Q3 note"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.AgentVersion) != 64 {
		t.Fatalf("run created with agent_version %q, want a sha256", r.AgentVersion)
	}
	waitRun(ctx, t, d.c, r.RunID, status(run.StatusAwaitingApproval))
	aps, err := d.c.ListApprovals(ctx, r.RunID)
	if err != nil || len(aps) != 1 || aps[0].Tool != "publish" {
		t.Fatalf("approvals %+v, %v: want one for publish", aps, err)
	}
	return r, aps[0]
}

func approve(ctx context.Context, t *testing.T, d *dev, ap api.Approval) {
	t.Helper()
	if _, err := d.c.Decide(ctx, ap.RunID, ap.ApprovalID, api.DecisionRequest{Decision: api.DecisionApprove, ArgsHash: ap.ArgsHash}); err != nil {
		t.Fatal(err)
	}
}

func events(ctx context.Context, t *testing.T, c *client.Client, id string) []api.Event {
	t.Helper()
	page, err := c.Events(ctx, id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return page.Events
}

func find(evs []api.Event, typ run.EventType) (api.Event, bool) {
	for _, e := range evs {
		if e.Type == typ {
			return e, true
		}
	}
	return api.Event{}, false
}

// published counts the destination's dispatches of every operation.
func (w *world) published(t *testing.T) int {
	b, err := os.ReadFile(filepath.Join(w.dest, "published.log"))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// logPreview keeps the preview's output in the test log (the report
// pastes it).
func logPreview(t *testing.T, variant, out string) {
	t.Logf("%s upgrade-check:\n%s", variant, out)
}

// TestApprovalAcrossVersions: a run waits for the approval of v1's
// publish; keel dev (v1) is killed with SIGKILL; keel dev of v2 takes the
// data directory and the approval is given. A v2 whose publish renamed a
// field or has no publish never applies it: the run waits for a person
// with the difference named. A v2 that changed only the instructions
// completes the run with agent_upgraded.
func TestApprovalAcrossVersions(t *testing.T) {
	cases := []struct {
		name, v2 string
		// preview and blocked: words the preview's line and the
		// agent_upgrade_blocked event must hold; blocked empty: the run
		// moves and completes.
		preview, blocked []string
	}{
		{name: "renamed field", v2: "v2-rename", preview: []string{"stop for a person", "fields -title +headline"},
			blocked: []string{"schema changed (fields -title +headline)", "it is not applied"}},
		{name: "removed tool", v2: "v2-removed", preview: []string{"stop for a person", "the tool is gone"},
			blocked: []string{"the tool is gone", "it is not applied"}},
		{name: "instructions only", v2: "v2-instructions", preview: []string{"move", "instructions changed"}},
		// The same change under a v2 that pins its runs: v1's run is not
		// moved, and keel dev has no v1 code to run it with.
		{name: "instructions only, pinned", v2: "v2-pinned", preview: []string{"stop for a person", "the agent is pinned"},
			blocked: []string{"the agent is pinned", "'s build, or cancel it"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The builds come first: the hang guard is for the scenario.
			w := newWorld(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			v1 := w.start(ctx, "v1")
			r, ap := awaitingApproval(ctx, t, v1)
			// The same preview through v1's API while it serves, as before
			// a deploy behind an API (upgrade-check --api): it must say
			// exactly what the store's preview says.
			viaAPI := w.cli(t, tc.v2, v1, "upgrade-check", "--api")
			v1.kill()

			out := w.preview(tc.v2)
			logPreview(t, tc.v2, out)
			if viaAPI != out {
				t.Fatalf("upgrade-check --api differs from --data-dir:\n%s\n---\n%s", viaAPI, out)
			}
			for _, want := range append([]string{r.RunID}, tc.preview...) {
				if !strings.Contains(out, want) {
					t.Fatalf("preview lacks %q:\n%s", want, out)
				}
			}
			if again := w.preview(tc.v2); again != out {
				t.Fatalf("a second preview differs: it changed something\n%s\n---\n%s", out, again)
			}
			// --strict, for a deploy script: exit 1 exactly when a run
			// would stop for a person.
			strict := exec.Command(w.bins[tc.v2], "upgrade-check", "--strict", "--data-dir", w.data)
			strict.Env = w.env()
			sout, serr := strict.CombinedOutput()
			if stops := slices.Contains(tc.preview, "stop for a person"); (serr != nil) != stops ||
				stops && !strings.Contains(string(sout), "--strict: 1 run(s) would stop for a person: "+r.RunID) {
				t.Fatalf("upgrade-check --strict: %v, want failing %v\n%s", serr, stops, sout)
			}

			v2 := w.start(ctx, tc.v2)
			approve(ctx, t, v2, ap)
			end := waitRun(ctx, t, v2.c, r.RunID, status(run.StatusNeedsHuman, run.StatusCompleted, run.StatusFailed))
			evs := events(ctx, t, v2.c, r.RunID)
			if len(tc.blocked) == 0 {
				up, ok := find(evs, "agent_upgraded")
				if end.Status != run.StatusCompleted || !ok || w.published(t) != 1 {
					t.Fatalf("status %s (%s), agent_upgraded %v, %d publications: want completed, upgraded, 1", end.Status, end.Error, ok, w.published(t))
				}
				var data struct{ From, To string }
				_ = json.Unmarshal(up.Data, &data)
				if data.From != r.AgentVersion || data.To == "" || data.To == data.From {
					t.Fatalf("agent_upgraded %s: want from %s to another version", up.Data, r.AgentVersion)
				}
				return
			}
			if end.Status != run.StatusNeedsHuman {
				t.Fatalf("status %s (%s), want needs_human", end.Status, end.Error)
			}
			if n := w.published(t); n != 0 {
				t.Fatalf("v1's approval was applied under %s: %d publications", tc.v2, n)
			}
			blocked, ok := find(evs, "agent_upgrade_blocked")
			if !ok {
				t.Fatal("no agent_upgrade_blocked event")
			}
			explained := w.cli(t, tc.v2, v2, "explain", r.RunID)
			shown := w.cli(t, tc.v2, v2, "show", r.RunID)
			for _, want := range tc.blocked {
				if !strings.Contains(string(blocked.Data), want) || !strings.Contains(end.Error, want) || !strings.Contains(explained, want) {
					t.Fatalf("event %s / error %q / explain %q: want %q in each", blocked.Data, end.Error, explained, want)
				}
			}
			if !strings.Contains(explained, "not moved from agent version "+r.AgentVersion[:12]) || !strings.Contains(shown, "(version "+r.AgentVersion[:12]+")") {
				t.Fatalf("explain or show does not name the versions:\n%s\n%s", explained, shown)
			}
		})
	}
}

// TestPendingOperationAcrossVersions: v1 dispatches publish and dies by
// SIGKILL before recording the outcome (fault point after_dispatch), so
// the operation is pending. v2 reconciles it under v1's contract: with v1
// promising a lookup, it is found and the run completes under v2; with v1
// promising nothing, it goes to a person even though v2 promises
// idempotency (under v2's contract it would be dispatched again).
func TestPendingOperationAcrossVersions(t *testing.T) {
	cases := []struct {
		name, v1, v2 string
		want         run.Status
		event        run.EventType
	}{
		{name: "lookup, found", v1: "v1", v2: "v2-instructions", want: run.StatusCompleted, event: run.EventOpReconciled},
		{name: "no promise, v2 idempotent", v1: "v1-none", v2: "v2-idempotent", want: run.StatusNeedsHuman, event: run.EventOpNeedsHuman},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The builds come first: the hang guard is for the scenario.
			w := newWorld(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			v1 := w.start(ctx, tc.v1, "KEEL_FAULTPOINT=after_dispatch")
			r, ap := awaitingApproval(ctx, t, v1)
			approve(ctx, t, v1, ap)
			if killed, err := v1.died(ctx); err != nil || !killed {
				t.Fatalf("v1 did not die by SIGKILL at after_dispatch: %v", err)
			}
			if n := w.published(t); n != 1 {
				t.Fatalf("%d publications before v2, want 1", n)
			}

			out := w.preview(tc.v2)
			logPreview(t, tc.v2, out)
			if !strings.Contains(out, r.RunID) || !strings.Contains(out, " move ") {
				t.Fatalf("preview: want %s to move:\n%s", r.RunID, out)
			}

			v2 := w.start(ctx, tc.v2)
			end := waitRun(ctx, t, v2.c, r.RunID, status(run.StatusNeedsHuman, run.StatusCompleted, run.StatusFailed))
			evs := events(ctx, t, v2.c, r.RunID)
			if end.Status != tc.want {
				t.Fatalf("status %s (%s), want %s", end.Status, end.Error, tc.want)
			}
			if n := w.published(t); n != 1 {
				t.Fatalf("%d publications after v2, want 1: the operation was dispatched again", n)
			}
			if _, ok := find(evs, "agent_upgraded"); !ok {
				t.Fatal("no agent_upgraded event")
			}
			if _, ok := find(evs, tc.event); !ok {
				t.Fatalf("no %s event", tc.event)
			}
		})
	}
}
