package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/keelrun/keel/examples/triage/tickets"
	"github.com/keelrun/keel/keeltest"
)

var allHits = flag.Bool("crashtest.all-hits", false, "TestCrashtest kills at every hit of every fault point, not only the first")

// crashtest runs `triage crashtest` on the scripted triage with the
// ticket service svc, which runs in the test's process and so outlives
// every kill.
func crashtest(t *testing.T, svc *tickets.Server, args ...string) (string, int) {
	t.Helper()
	hs := httptest.NewServer(svc)
	t.Cleanup(hs.Close)
	bin := keeltest.Build(t, ".")
	cmd := exec.Command(bin, append([]string{"crashtest", "--script", "agent/script.json", "--dir", t.TempDir()}, args...)...)
	cmd.Env = append(os.Environ(), "TRIAGE_TICKETS_URL="+hs.URL, "TRIAGE_TICKETS_TOKEN="+token)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		t.Logf("stderr:\n%s", errb.String())
		return out.String(), ee.ExitCode()
	}
	t.Fatal(err)
	return "", 0
}

// TestCrashtest: the triage program's own `crashtest` kills it at each
// fault point (the first hit; -crashtest.all-hits: every hit), restarts
// it, and counts update_ticket's effects at the ticket service by key:
// one row per effect and point, each applied exactly once; and a short
// soak of random kills.
func TestCrashtest(t *testing.T) {
	svc, err := tickets.NewServer(token, tickets.SampleData())
	if err != nil {
		t.Fatal(err)
	}
	const soak = 4
	args := []string{"--json", "--soak", fmt.Sprint(soak)}
	if *allHits {
		args = append(args, "--all-hits")
	}
	out, code := crashtest(t, svc, args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	var rep struct {
		Hits map[string]int
		Rows []struct {
			Name       string
			Kills      int
			Violations []string
			Effects    []struct {
				Effect      string `json:"effect"`
				Destination int    `json:"destination"`
				By          string `json:"by"`
				Recorded    string `json:"recorded"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	want := 0
	for _, n := range rep.Hits {
		want += min(n, 1)
		if *allHits {
			want += n - 1
		}
	}
	if len(rep.Rows) != want+soak || want < 9 {
		t.Fatalf("%d rows for hits %v", len(rep.Rows), rep.Hits)
	}
	for _, r := range rep.Rows {
		soaked := strings.HasPrefix(r.Name, "soak-")
		if (r.Kills != 1 && !soaked) || len(r.Violations) > 0 || len(r.Effects) != 1 {
			t.Errorf("%s: kills %d, violations %v, effects %+v", r.Name, r.Kills, r.Violations, r.Effects)
			continue
		}
		if e := r.Effects[0]; e.Effect != "update_ticket" || e.Destination != 1 || e.By != "count" || e.Recorded != "succeeded" {
			t.Errorf("%s: %+v, want update_ticket applied once (by count), succeeded", r.Name, e)
		}
	}
	// Every run updated T-1001 once, under its own key.
	if got := len(svc.Applied()); got != len(rep.Rows)+1 {
		t.Errorf("%d updates applied for %d runs", got, len(rep.Rows)+1)
	}
}

// TestCrashtestCatchesABrokenDestination: update_ticket declares the
// service idempotent by key, but this service applies every request. The
// redispatch after a kill applies the update twice; crashtest names the
// duplicate and exits non-zero.
func TestCrashtestCatchesABrokenDestination(t *testing.T) {
	svc, err := tickets.NewServer(token, tickets.SampleData())
	if err != nil {
		t.Fatal(err)
	}
	svc.BreakIdempotency()
	out, code := crashtest(t, svc)
	t.Logf("\n%s", out)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{"FAIL after_dispatch:1", "DUPLICATE: update_ticket operation", "applied 2 times"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if strings.Contains(out, token) {
		t.Error("the report shows the ticket service's token")
	}
}
