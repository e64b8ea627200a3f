package cli

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// TestUndeliveredInputsAndSteps is issue #32 item 8: a run that ended
// with accepted inputs it never read says so in show and in explain, and
// both count the same steps (the run's, not the worker invocations).
func TestUndeliveredInputsAndSteps(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "keel.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := api.New(api.Deps{Store: st, Starter: &scriptedStarter{st: st, ctx: ctx}, Resumer: noopResumer{}, Records: st,
		Auth: api.Tokens{token: "cli-user"}, Agents: api.AgentSet{"research": {}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	e := &testEnv{t: t, st: st, srv: srv}

	r, _, err := st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "s", Owner: "cli-user", Agent: "research", Request: "x",
		InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	var inputs []run.Input
	for _, text := range []string{"one", "two", "three"} {
		in, err := st.EnqueueInput(ctx, r.ID, text)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, in)
	}
	// Three worker invocations, 35 steps between them; the last fails on
	// its budget with the inputs still queued.
	for i, c := range []store.Commit{
		{Run: &store.RunPatch{Status: run.StatusRunning, StepsDelta: 20}},
		{Run: &store.RunPatch{StepsDelta: 14}},
		{Run: &store.RunPatch{Status: run.StatusFailed, StepsDelta: 1, Error: ptr("token budget exceeded")}},
	} {
		l, err := st.AcquireLease(ctx, r.ID, "w", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		c.RunID, c.Token, c.Run.ReleaseLease = r.ID, l.Lease.Token, true
		c.Events = []run.Event{{Type: run.EventLeaseAcquired, Data: []byte(`{"owner":"w"}`)}}
		if _, err := st.Commit(ctx, c); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}

	code, show, errout := e.keel("", "show", r.ID)
	if code != 0 {
		t.Fatalf("show: %d %s", code, errout)
	}
	code, story, errout := e.keel("", "explain", r.ID)
	if code != 0 {
		t.Fatalf("explain: %d %s", code, errout)
	}
	for name, out := range map[string]string{"show": show, "explain": story} {
		if !strings.Contains(out, "3 accepted input(s) never delivered") {
			t.Errorf("%s does not say the inputs were never delivered:\n%s", name, out)
		}
		for _, in := range inputs {
			if !strings.Contains(out, in.ID) {
				t.Errorf("%s does not name input %s:\n%s", name, in.ID, out)
			}
		}
	}
	showSteps := regexp.MustCompile(`steps\s+(\d+) of`).FindStringSubmatch(show)
	storySteps := regexp.MustCompile(`after (\d+) step\(s\)`).FindStringSubmatch(story)
	if showSteps == nil || storySteps == nil || showSteps[1] != "35" || storySteps[1] != showSteps[1] {
		t.Errorf("steps: show %v, explain %v, want 35 in both\nshow:\n%s\nexplain:\n%s", showSteps, storySteps, show, story)
	}
}
