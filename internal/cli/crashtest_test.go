package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/model/scripted"
	"github.com/keelrun/keel/internal/proof/crash"
	"github.com/keelrun/keel/internal/testbin"
	"github.com/keelrun/keel/keeltest"
)

var allHits = flag.Bool("crashtest.all-hits", false, "TestCrashtestResearch kills at every hit of every fault point, not only the first")

// The research agent's recorded script, for the programs testbin builds
// once for the package's tests: the stock program (the research agent),
// its publication server and testdata/notes (the setups of issue 25).
var researchScript, _ = filepath.Abs("../fixture/script.json")

func binaries(t *testing.T) (keel, pub string) {
	t.Helper()
	return testbin.Keel(t), testbin.Pubserver(t)
}

// pubserver starts the research agent's destination in a process of its
// own (it outlives every kill) and returns its URL.
func pubserver(t *testing.T, flags ...string) string {
	t.Helper()
	_, pub := binaries(t)
	dir := t.TempDir()
	urlFile := filepath.Join(dir, "url")
	cmd := exec.Command(pub, append([]string{"-log", filepath.Join(dir, "pubs.jsonl"), "-url-file", urlFile}, flags...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(urlFile); err == nil && len(bytes.TrimSpace(b)) > 0 {
			return string(bytes.TrimSpace(b))
		}
	}
	t.Fatal("pubserver did not serve")
	return ""
}

// researchRun runs the research agent once on the program's dev with
// model, approves the publication, and returns the run's recorded script
// (keel record) and its tool sequence.
func researchRun(t *testing.T, model, pubURL string) (scripted.Script, []string) {
	t.Helper()
	bin, _ := binaries(t)
	p := keeltest.StartProgram(t, bin, "KEEL_MODEL=scripted:"+model, "RESEARCH_PUBLISH="+pubURL)
	id := p.StartRun(t, "research", "Write a short report on durable agents and publish it.")
	p.Approve(t, id, p.WaitApproval(t, id))
	p.WaitFor(t, id, "completed")
	out := filepath.Join(t.TempDir(), "recorded.json")
	cmd := exec.Command(bin, "record", "-o", out, id)
	cmd.Env = append(os.Environ(), "KEEL_URL="+p.URL, "KEEL_TOKEN="+p.Token)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("keel record: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var s scripted.Script
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("recorded script: %v\n%s", err, b)
	}
	var tools []string
	for _, e := range p.Events(t, id) {
		if e.Type == "tool_started" {
			var d struct{ Tool string }
			_ = json.Unmarshal(e.Data, &d)
			tools = append(tools, d.Tool)
		}
	}
	return s, tools
}

// TestRecordReplaysToolCalls: a run on the hand-written research script is
// recorded with keel record; a run on the recorded script makes exactly
// the same tool calls (names and arguments, turn by turn), and recording
// that run gives the same script again.
func TestRecordReplaysToolCalls(t *testing.T) {
	t.Parallel()
	url := pubserver(t)
	first, firstTools := researchRun(t, researchScript, url)
	var orig scripted.Script
	b, _ := os.ReadFile(researchScript)
	if err := json.Unmarshal(b, &orig); err != nil {
		t.Fatal(err)
	}
	if len(first.Turns) != len(orig.Turns)+1 { // the final answer is a turn of its own
		t.Fatalf("recorded %d turns, the script has %d and a final answer", len(first.Turns), len(orig.Turns))
	}
	for i, turn := range orig.Turns {
		if len(turn.ToolCalls) != len(first.Turns[i].ToolCalls) {
			t.Fatalf("turn %d: recorded %d calls, the script has %d", i, len(first.Turns[i].ToolCalls), len(turn.ToolCalls))
		}
		for j, c := range turn.ToolCalls {
			// The script's references ({{draft_report.sha256}}) are
			// recorded as references again.
			if got := first.Turns[i].ToolCalls[j]; got.Name != c.Name || strings.Count(string(got.Args), "{{") != strings.Count(string(c.Args), "{{") {
				t.Errorf("turn %d call %d: recorded %s %s, scripted %s %s", i, j, got.Name, got.Args, c.Name, c.Args)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "recorded.json")
	rb, _ := json.Marshal(first)
	if err := os.WriteFile(path, rb, 0o644); err != nil {
		t.Fatal(err)
	}
	second, secondTools := researchRun(t, path, url)
	calls := func(s scripted.Script) [][]string {
		var out [][]string
		for _, turn := range s.Turns {
			var cs []string
			for _, c := range turn.ToolCalls {
				var v any
				_ = json.Unmarshal(c.Args, &v)
				canon, _ := json.Marshal(v)
				cs = append(cs, c.Name+" "+string(canon))
			}
			out = append(out, cs)
		}
		return out
	}
	if !reflect.DeepEqual(calls(first), calls(second)) {
		t.Errorf("replay made other tool calls:\nrecorded %q\nreplayed %q", calls(first), calls(second))
	}
	if !reflect.DeepEqual(firstTools, secondTools) || len(firstTools) == 0 {
		t.Errorf("tools started: recorded run %v, replay %v", firstTools, secondTools)
	}
	if first.Final != second.Final || first.Final == "" {
		t.Errorf("final answer: recorded %q, replayed %q", first.Final, second.Final)
	}
}

// crashtest runs `keel crashtest` on the research agent against pubURL
// with contract (what the agent is told the destination promises).
func crashtest(t *testing.T, pubURL, contract string, extra ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin, _ := binaries(t)
	args := append([]string{"crashtest", "--agent", "research", "--script", researchScript, "--dir", t.TempDir()}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "RESEARCH_PUBLISH="+pubURL, "RESEARCH_PUBLISH_CONTRACT="+contract)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestCrashtestResearch: the stock program's research agent, on a
// destination that ignores Idempotency-Key and answers lookups (so only
// Keel's reconciliation stands between a crash and a second publication),
// passes every fault point's first hit: one row each, killed once,
// published exactly once by the count hook.
func TestCrashtestResearch(t *testing.T) {
	t.Parallel()
	args := []string{"--json"}
	if *allHits {
		args = append(args, "--all-hits")
	}
	out, errOut, code := crashtest(t, pubserver(t, "-no-idempotency"), "lookup", args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var rep crash.ProgramReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	byName := map[string]crash.Result{}
	for _, r := range rep.Rows {
		byName[r.Name] = r
	}
	want := 0
	for _, p := range crash.Points {
		last := min(rep.Hits[p], 1)
		if *allHits {
			last = rep.Hits[p]
		}
		if last == 0 {
			t.Errorf("the research run never reaches %s", p)
		}
		want += last
		for nth := 1; nth <= last; nth++ {
			name := fmt.Sprintf("%s:%d", p, nth)
			r, ok := byName[name]
			if !ok {
				t.Errorf("no row for %s (hits %v)", name, rep.Hits)
				continue
			}
			if r.Kills != 1 || !r.Pass() || len(r.Effects) != 1 {
				t.Errorf("%s: kills %d, pass %v, effects %+v, violations %v", r.Name, r.Kills, r.Pass(), r.Effects, r.Violations)
				continue
			}
			if e := r.Effects[0]; e.Effect != "publish_report" || e.Destination != 1 || e.By != "count" || e.Recorded != "succeeded" {
				t.Errorf("%s: effect row %+v, want publish_report applied once by count, succeeded", r.Name, e)
			}
		}
	}
	if len(rep.Rows) != want || rep.Kills != want {
		t.Errorf("%d rows and %d kills for hits %v, want %d", len(rep.Rows), rep.Kills, rep.Hits, want)
	}
}

// TestCrashtestCatchesABrokenEffect: the agent is told the destination is
// idempotent by key (and cannot be looked up), but it applies every
// request. A kill after the dispatch makes Keel send it again with the
// same key, and crashtest reports the duplicate and exits non-zero.
func TestCrashtestCatchesABrokenEffect(t *testing.T) {
	t.Parallel()
	out, errOut, code := crashtest(t, pubserver(t, "-no-idempotency", "-no-lookup"), "idempotent")
	t.Logf("\n%s", out)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, errOut)
	}
	if !strings.Contains(out, "FAIL after_dispatch:1") || !strings.Contains(out, "DUPLICATE: publish_report operation") || !strings.Contains(out, "applied 2 times") {
		t.Errorf("the report does not name the duplicate after after_dispatch:1")
	}
	if !strings.Contains(out, "op_reconciled") {
		t.Errorf("the failure does not show the events that explain it")
	}
}

// notesDest is a destination that ignores idempotency keys: every POST is
// applied. It runs in the test's process, so it outlives every kill.
type notesDest struct {
	mu      sync.Mutex
	applied map[string]int
}

func (d *notesDest) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch r.Method {
	case http.MethodPost:
		key := r.Header.Get("Idempotency-Key")
		d.applied[key]++
		fmt.Fprintf(w, `{"id":"note_%s_%d"}`, key, d.applied[key])
	default:
		fmt.Fprint(w, d.applied[r.URL.Query().Get("key")])
	}
}

// notesCrashtest runs `notes crashtest` (testdata/notes) with promise
// declared, a Count hook when count, against a destination that ignores
// keys.
func notesCrashtest(t *testing.T, promise string, count bool, extra ...string) (string, int) {
	t.Helper()
	notes := testbin.Build(t, "./testdata/notes")
	dest := &notesDest{applied: map[string]int{}}
	hs := httptest.NewServer(dest)
	t.Cleanup(hs.Close)
	cmd := exec.Command(notes, append([]string{"crashtest", "--dir", t.TempDir()}, extra...)...)
	cmd.Env = append(os.Environ(), "NOTES_URL="+hs.URL, "NOTES_PROMISE="+promise)
	if count {
		cmd.Env = append(cmd.Env, "NOTES_COUNT=1")
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("\n%s", out.String())
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	}
	t.Fatal(err)
	return "", 0
}

// TestCrashtestNeverGreenUnverified: issue 25's setups on one destination
// that ignores keys. Declared idempotent with no Count hook and no Lookup,
// the rows that dispatched twice cannot be checked: crashtest names them
// UNVERIFIED, says what to do, and exits non-zero unless told to accept
// them. With a Count hook it names the duplicate. Declared as promising
// nothing (the truth), every row passes, the killed ones needs_human.
func TestCrashtestNeverGreenUnverified(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		promise string
		count   bool
		args    []string
		code    int
		want    []string
		notWant []string
	}{
		{name: "unsafe: idempotent, no Count, no Lookup", promise: "idempotent", code: 1,
			want: []string{"UNVERIFIED after_dispatch:1", "post_note operation", "dispatched 2 times", "what to do:", "add a Lookup",
				"declare the promise it really keeps", "add a Count hook", "runs unverified (", "after_dispatch:1", "--accept-unverified",
				"0 failed", "kills=1 post_note="},
			notWant: []string{"pubs="}},
		{name: "unsafe, accepted", promise: "idempotent", args: []string{"--accept-unverified"}, code: 0,
			want: []string{"UNVERIFIED after_dispatch:1", "unverified,"}},
		{name: "unsafe with a Count hook", promise: "idempotent", count: true, code: 1,
			want: []string{"FAIL after_dispatch:1", "DUPLICATE: post_note operation", "applied 2 times", "what to do:",
				"declare the promise it really keeps"}},
		{name: "honest: promises nothing", promise: "none", code: 0,
			want:    []string{"needs_human", " 0 failed, 0 unverified"},
			notWant: []string{"UNVERIFIED", "FAIL"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, code := notesCrashtest(t, tc.promise, tc.count, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the output lacks %q", w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("the output has %q", w)
				}
			}
		})
	}
}

// TestCrashtestNamesAnInProcessDestination: an effect whose destination
// lives in the program's memory (as the scaffold's outbox once did) holds
// nothing when crashtest asks it from another process, even for the run
// nobody killed. crashtest fails and names that cause, not the Lookup's
// key.
func TestCrashtestNamesAnInProcessDestination(t *testing.T) {
	t.Parallel()
	out, code := notesCrashtest(t, "memory", false)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, w := range []string{"FAIL unkilled", "is recorded succeeded but the destination does not hold it",
		"this destination answers not-found for every operation, even in the unkilled run: it must outlive the process"} {
		if !strings.Contains(out, w) {
			t.Errorf("the output lacks %q", w)
		}
	}
	if strings.Contains(out, "the Lookup must search by the operation id") {
		t.Error("the advice blames the Lookup's key")
	}
}
