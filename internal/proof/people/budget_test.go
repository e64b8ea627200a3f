package people

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/notify"
	"github.com/keelrun/keel/internal/observe/explain"
	"github.com/keelrun/keel/internal/testbin"
)

const price = 1_000 // testdata/budgetagent's Price

// receiver is a signed-webhook receiver on loopback that keeps each
// delivery id once.
type receiver struct {
	secret []byte
	mu     sync.Mutex
	got    map[string]notify.Message
	bad    []string
	// attempts is the delivery id of every request, failed ones too;
	// failFirst answers that many first requests 503, as a receiver that
	// is briefly down.
	attempts  []string
	failFirst int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.attempts = append(rc.attempts, r.Header.Get(notify.HeaderDelivery))
	if rc.failFirst > 0 {
		rc.failFirst--
		http.Error(w, "briefly down", http.StatusServiceUnavailable)
		return
	}
	if err := notify.Verify(rc.secret, r.Header, body, time.Now(), time.Hour); err != nil {
		rc.bad = append(rc.bad, err.Error())
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var m notify.Message
	if err := json.Unmarshal(body, &m); err != nil {
		rc.bad = append(rc.bad, err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.Header.Get(notify.HeaderDelivery) != m.DeliveryID {
		rc.bad = append(rc.bad, "delivery header "+r.Header.Get(notify.HeaderDelivery)+" for "+m.DeliveryID)
	}
	rc.got[m.DeliveryID] = m // dedup by delivery id
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) approval(id string) (notify.Message, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, m := range rc.got {
		if m.ApprovalID == id {
			return m, true
		}
	}
	return notify.Message{}, false
}

// TestSpendCapPausesAndALinkRaisesIt: on a real keel dev, a run whose
// model calls a priced lookup 20 times at once under a cap of 10 lookups
// pauses at the cap with its recorded spend at most the cap; the pause's
// notification reaches a signed webhook on loopback with a one-time link;
// posting "approve" to the link raises the cap by what the pause asked for,
// and the run completes with all 20 lookups paid, the raise in its log.
func TestSpendCapPausesAndALinkRaisesIt(t *testing.T) {
	testbin.SkipShort(t, "builds a program and runs keel dev")
	dir := t.TempDir()
	bin := buildAgent(t, dir)
	rc := &receiver{secret: []byte("hook-secret-for-the-test"), got: map[string]notify.Message{}}
	hook := httptest.NewServer(rc)
	t.Cleanup(hook.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard
	t.Cleanup(cancel)

	cl := startDev(ctx, t, bin, filepath.Join(dir, "data"),
		"KEEL_NOTIFY_WEBHOOK_URL="+hook.URL, "KEEL_NOTIFY_WEBHOOK_SECRET="+string(rc.secret), "KEEL_NOTIFY_INTERVAL=200ms")
	r, _, err := cl.CreateRun(ctx, api.CreateRunRequest{Agent: "budget", Input: "look them up"}, "")
	if err != nil {
		t.Fatal(err)
	}
	paused := waitRun(ctx, t, cl, r.RunID, run.StatusAwaitingApproval)
	if c := paused.Counters; c.SpendUsedMicroUSD > paused.Limits.MaxSpendMicroUSD || c.SpendUsedMicroUSD != 10*price || c.ToolCallsUsed != 10 {
		t.Fatalf("paused at the cap %d with counters %+v", paused.Limits.MaxSpendMicroUSD, c)
	}
	t.Logf("paused: spend %d of cap %d after %d of 20 concurrent calls", paused.Counters.SpendUsedMicroUSD,
		paused.Limits.MaxSpendMicroUSD, paused.Counters.ToolCallsUsed)
	aps, err := cl.ListApprovals(ctx, r.RunID)
	if err != nil || len(aps) != 1 || aps[0].Tool != "keel.raise_limit" {
		t.Fatalf("approvals %+v %v", aps, err)
	}
	assertStory(ctx, t, cl, r.RunID, "paused at its max_spend limit (10000) and asked a person to raise it by 20000",
		"keel raise "+r.RunID)
	var msg notify.Message
	for ok := false; !ok; {
		if msg, ok = rc.approval(aps[0].ApprovalID); !ok {
			sleep(ctx, t, 100*time.Millisecond)
		}
	}
	if msg.Link == "" || msg.ArgsHash != aps[0].ArgsHash || !strings.Contains(string(msg.Args), `"raise_by":20000`) {
		t.Fatalf("notification %+v", msg)
	}
	if code := postLink(t, msg.Link, "approve"); code != http.StatusOK {
		t.Fatalf("link approve: %d", code)
	}
	// The link works once: another decision through it is refused (the
	// same one again is answered with the recorded decision, a retry).
	if code := postLink(t, msg.Link, "deny"); code == http.StatusOK {
		t.Fatal("the link decided twice")
	}
	done := waitRun(ctx, t, cl, r.RunID, run.StatusCompleted)
	if done.Counters.SpendUsedMicroUSD != 20*price || done.Limits.MaxSpendMicroUSD != 30*price || done.Counters.ToolCallsUsed != 20 {
		t.Fatalf("completed: limits %+v counters %+v", done.Limits, done.Counters)
	}
	page, err := cl.Events(ctx, r.RunID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var raised []string
	for _, ev := range page.Events {
		if ev.Type == run.EventBudgetRaised {
			raised = append(raised, string(ev.Data))
		}
	}
	if len(raised) != 1 || !strings.Contains(raised[0], `"by":20000`) || !strings.Contains(raised[0], `"approved_by"`) {
		t.Fatalf("budget_raised events %v", raised)
	}
	assertStory(ctx, t, cl, r.RunID, "max_spend raised from 10000 to 30000 by ")
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 {
		t.Fatalf("bad deliveries: %v", rc.bad)
	}
}

// assertStory fails unless the run's explain story, as rendered for a
// person, says each of want.
func assertStory(ctx context.Context, t *testing.T, cl *client.Client, runID string, want ...string) {
	t.Helper()
	s, err := cl.Explain(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	text := explain.Render(s)
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("explain does not say %q:\n%s", w, text)
		}
	}
}

// buildAgent builds testdata/budgetagent into dir.
func buildAgent(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "budgetagent")
	if out, err := exec.Command("go", "build", "-buildvcs=false", "-o", bin, "./testdata/budgetagent").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startDev starts prog dev on a free loopback port with dataDir, and
// returns a client once it serves; the process group is killed at cleanup.
func startDev(ctx context.Context, t *testing.T, prog, dataDir string, env ...string) *client.Client {
	t.Helper()
	cl, _ := startDevProc(ctx, t, prog, dataDir, env...)
	return cl
}

// startDevProc is startDev that also returns a channel closed when the
// process exits.
func startDevProc(ctx context.Context, t *testing.T, prog, dataDir string, env ...string) (*client.Client, <-chan struct{}) {
	t.Helper()
	if err := os.Remove(filepath.Join(dataDir, "url")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	cmd := exec.Command(prog, "dev", "--addr", "127.0.0.1:0", "--data-dir", dataDir)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KEEL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	logf, err := os.Create(filepath.Join(t.TempDir(), "dev.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("keel dev log:\n%s", b)
		}
		logf.Close()
	})
	var u []byte
	for len(u) == 0 {
		u, _ = os.ReadFile(filepath.Join(dataDir, "url"))
		if len(u) == 0 {
			select {
			case <-exited:
				t.Fatal("keel dev exited before it served")
			default:
			}
			sleep(ctx, t, 50*time.Millisecond)
		}
	}
	tok, err := os.ReadFile(filepath.Join(dataDir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	// A transport of its own: no connection to a killed process is reused.
	cl, err := client.New(strings.TrimSpace(string(u)), strings.TrimSpace(string(tok)), &http.Client{Transport: &http.Transport{}})
	if err != nil {
		t.Fatal(err)
	}
	return cl, exited
}

// waitRun polls the run until it has status want; a final other status
// fails the test.
func waitRun(ctx context.Context, t *testing.T, cl *client.Client, id string, want run.Status) api.Run {
	t.Helper()
	for {
		r, err := cl.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == want {
			return r
		}
		if r.Status.Terminal() {
			t.Fatalf("run %s ended %s (%s), want %s", id, r.Status, r.Error, want)
		}
		sleep(ctx, t, 100*time.Millisecond)
	}
}

func postLink(t *testing.T, link, decision string) int {
	t.Helper()
	resp, err := http.PostForm(link, url.Values{"decision": {decision}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func sleep(ctx context.Context, t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-ctx.Done():
		t.Fatal("gave up waiting: ", ctx.Err())
	case <-time.After(d):
	}
}
