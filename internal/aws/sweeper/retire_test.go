package sweeper_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/aws/sweeper"
	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// versions is a step function's published versions; the Lambda API
// behind it is exercised in internal/proof/awslocal on moto.
type versions struct {
	published []string
	live      string
	deleted   []string
}

func (v *versions) Published(context.Context) ([]string, string, error) {
	return slices.Clone(v.published), v.live, nil
}

func (v *versions) Delete(_ context.Context, fn string) error {
	v.deleted = append(v.deleted, fn)
	v.published = slices.DeleteFunc(v.published, func(s string) bool { return s == fn })
	return nil
}

// TestRetireVersions: a version stays while the live alias points to it,
// while it is newer, or while a live run (needs_human included) was
// written by an agent version it runs; it goes once none is left.
func TestRetireVersions(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "keel.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mk := func(id, agent, version string, status run.Status) {
		r := run.Run{ID: id, SessionID: "s", Owner: "o", Agent: agent, AgentVersion: version, Request: "r",
			InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()}
		if _, _, err := st.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		l, err := st.AcquireLease(ctx, id, "worker", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Commit(ctx, store.Commit{RunID: id, Token: l.Lease.Token,
			Run: &store.RunPatch{Status: status, ReleaseLease: true}}); err != nil {
			t.Fatal(err)
		}
	}
	mk("run_a", "pub", "aa01", run.StatusNeedsHuman) // keeps Step:1
	mk("run_b", "pub", "aa02", run.StatusCompleted)  // keeps nothing
	homes := []agentver.Home{{Agent: "pub", Version: "aa01", Function: "Step:1"}, {Agent: "pub", Version: "aa02", Function: "Step:2"},
		{Agent: "pub", Version: "aa03", Function: "Step:3"}}
	vs := &versions{published: []string{"Step:1", "Step:2", "Step:3", "Step:4", "Step:5"}, live: "Step:4"}
	sw := &sweeper.Sweeper{Store: st, Executions: &executions{status: map[string]string{}}, Finalizer: &finalizer{},
		Retirement: &sweeper.Retirement{
			Versions: vs,
			Homes:    func(context.Context) ([]agentver.Home, error) { return homes, nil },
		}}
	rep, err := sw.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, v := range rep.Versions {
		got[v.Function] = v.Action
	}
	want := map[string]string{"Step:1": sweeper.VersionKept, "Step:2": sweeper.VersionRetired, "Step:3": sweeper.VersionRetired,
		"Step:4": sweeper.VersionKept, "Step:5": sweeper.VersionKept}
	if !mapsEqual(got, want) || !slices.Equal(vs.deleted, []string{"Step:2", "Step:3"}) {
		t.Fatalf("versions %+v, deleted %v; want %v", rep.Versions, vs.deleted, want)
	}
	if rep.Versions[0].Runs[0] != "run_a" {
		t.Fatalf("Step:1 kept for %v, want run_a", rep.Versions[0].Runs)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
