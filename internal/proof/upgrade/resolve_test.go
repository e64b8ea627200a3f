package upgrade

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
)

// cliFails runs a client command of variant's binary against d that must
// fail, and returns its output.
func (w *world) cliFails(t *testing.T, variant string, d *dev, args ...string) string {
	t.Helper()
	cmd := exec.Command(w.bins[variant], append([]string{"--url", d.c.BaseURL(), "--token", d.token}, args...)...)
	cmd.Env = w.env()
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("%s %v succeeded, want a refusal:\n%s", variant, args, out)
	}
	return string(out)
}

// TestBlockedApprovalHasAWayOut is issue 40's scenario: v1's run awaits
// the approval of publish; keel dev of v1 is killed with SIGKILL; keel
// dev of v2, whose publish renamed a field, takes the data directory.
// Before anyone approves, show and explain warn that v2 would stop the
// run; approved anyway, it stops for a person (agent_upgrade_blocked),
// and explain names the ways out, not a fork that would stop the same
// way. Each way out then works: v1's build started again and asked to
// take the run back finishes it (the approval given for v1's exact
// arguments applied, once); or a person denies the call under v2, and the run
// goes on under v2 with nothing published; or, warned, a person denies
// it before approving, and the run goes on under v2.
func TestBlockedApprovalHasAWayOut(t *testing.T) {
	for _, way := range []string{"old build", "deny under v2", "deny before approving"} {
		t.Run(way, func(t *testing.T) {
			w := newWorld(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			v1 := w.start(ctx, "v1")
			r, _ := awaitingApproval(ctx, t, v1)
			v1.kill()

			v2 := w.start(ctx, "v2-rename")
			short := r.AgentVersion[:12]
			// The warning comes before the approval, where a person looks.
			if shown := w.cli(t, "v2-rename", v2, "show", r.RunID); !strings.Contains(shown, "warning") || !strings.Contains(shown, "fields -title +headline") {
				t.Fatalf("show gives no warning that v2 would stop the run:\n%s", shown)
			}
			if explained := w.cli(t, "v2-rename", v2, "explain", r.RunID); !strings.Contains(explained, "Warning:") || !strings.Contains(explained, "records of "+short) {
				t.Fatalf("explain gives no warning that v2 would stop the run:\n%s", explained)
			}
			if way == "deny before approving" {
				// The warning's advice: deny, and v2 goes on (the denied
				// call is never made, so nothing of v1's is left open).
				w.cli(t, "v2-rename", v2, "deny", "--yes", "--reason", "title is now headline: ask again", r.RunID)
				end := waitRun(ctx, t, v2.c, r.RunID, status(run.StatusCompleted, run.StatusFailed, run.StatusNeedsHuman))
				if _, ok := find(events(ctx, t, v2.c, r.RunID), "agent_upgraded"); end.Status != run.StatusCompleted || !ok || w.published(t) != 0 {
					t.Fatalf("status %s (%s), agent_upgraded %v, %d publications: want completed under v2, nothing published", end.Status, end.Error, ok, w.published(t))
				}
				return
			}
			// Approved anyway, through the command that warns again.
			if out := w.cli(t, "v2-rename", v2, "approve", "--yes", r.RunID); !strings.Contains(out, "warning:") || !strings.Contains(out, "not applied") {
				t.Fatalf("approve under v2 did not warn:\n%s", out)
			}
			end := waitRun(ctx, t, v2.c, r.RunID, status(run.StatusNeedsHuman, run.StatusCompleted, run.StatusFailed))
			if end.Status != run.StatusNeedsHuman {
				t.Fatalf("status %s (%s), want needs_human", end.Status, end.Error)
			}
			if _, ok := find(events(ctx, t, v2.c, r.RunID), "agent_upgrade_blocked"); !ok {
				t.Fatal("no agent_upgrade_blocked event")
			}
			explained := w.cli(t, "v2-rename", v2, "explain", r.RunID)
			// (The story names commands in the binary's own name.)
			for _, want := range []string{" resolve " + r.RunID + " --old-version", " resolve " + r.RunID + " --deny"} {
				if !strings.Contains(explained, want) {
					t.Fatalf("explain does not name %q:\n%s", want, explained)
				}
			}
			if strings.Contains(explained, " fork ") {
				t.Fatalf("explain advises a fork, which v2 would stop the same way:\n%s", explained)
			}

			switch way {
			case "old build":
				// v2 cannot finish it under v1: asked, it says where.
				if out := w.cliFails(t, "v2-rename", v2, "resolve", r.RunID, "--old-version", "--reason", "v1 back"); !strings.Contains(out, "wrong_agent_version") || !strings.Contains(out, short) {
					t.Fatalf("resolve --old-version under v2: %s", out)
				}
				v2.kill()
				v1 = w.start(ctx, "v1")
				// Restarting it is not a decision: the run still waits.
				if got, err := v1.c.GetRun(ctx, r.RunID); err != nil || got.Status != run.StatusNeedsHuman {
					t.Fatalf("after v1's restart: %+v, %v; want needs_human until a person decides", got.Status, err)
				}
				w.cli(t, "v1", v1, "resolve", r.RunID, "--old-version", "--reason", "rolled back to v1")
				// The approval was given for v1's exact arguments: v1
				// applies it, once.
				end = waitRun(ctx, t, v1.c, r.RunID, status(run.StatusCompleted, run.StatusFailed, run.StatusNeedsHuman))
				if end.Status != run.StatusCompleted || w.published(t) != 1 {
					t.Fatalf("status %s (%s), %d publications: want completed, 1", end.Status, end.Error, w.published(t))
				}
				if _, ok := find(events(ctx, t, v1.c, r.RunID), "run_resolved"); !ok {
					t.Fatal("no run_resolved event")
				}
			case "deny under v2":
				w.cli(t, "v2-rename", v2, "resolve", r.RunID, "--deny", "--reason", "title is now headline: ask again")
				end = waitRun(ctx, t, v2.c, r.RunID, status(run.StatusCompleted, run.StatusFailed, run.StatusNeedsHuman))
				evs := events(ctx, t, v2.c, r.RunID)
				if end.Status != run.StatusCompleted || w.published(t) != 0 {
					t.Fatalf("status %s (%s), %d publications: want completed, none", end.Status, end.Error, w.published(t))
				}
				if _, ok := find(evs, "agent_upgraded"); !ok {
					t.Fatal("no agent_upgraded: the run did not move to v2")
				}
				if _, ok := find(evs, "run_resolved"); !ok {
					t.Fatal("no run_resolved event")
				}
			}
		})
	}
}
