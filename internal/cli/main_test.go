package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

const token = "tok-cli"

// testInstance is the instance id the test API answers on /healthz.
const testInstance = "kins_test"

// scriptedStarter plays the executor's part in these tests: when a run is
// started it writes, through the real store and under a lease, what the
// harness would: a collect tool with progress, an approval for publish,
// and — once the approval is decided — the publish and the end.
type scriptedStarter struct {
	st     *sqlite.Store
	ctx    context.Context
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
	script bool
}

func (s *scriptedStarter) StartRun(_ context.Context, id string) error {
	if !s.script {
		return nil
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.drive(id); err != nil && s.ctx.Err() == nil {
			s.mu.Lock()
			s.errs = append(s.errs, err)
			s.mu.Unlock()
			// End the run so that a watching CLI returns and the test
			// reports the error instead of hanging.
			_ = s.commit(id, store.Commit{Run: &store.RunPatch{Status: run.StatusFailed, Error: ptr(err.Error())}})
		}
	}()
	return nil
}

func (s *scriptedStarter) commit(id string, c store.Commit) error {
	r, err := s.st.AcquireLease(s.ctx, id, "scripted", time.Minute)
	if err != nil {
		return err
	}
	c.RunID, c.Token = id, r.Lease.Token
	if c.Run == nil {
		c.Run = &store.RunPatch{}
	}
	c.Run.ReleaseLease = true
	_, err = s.st.Commit(s.ctx, c)
	return err
}

func (s *scriptedStarter) commitAll(id string, cs ...store.Commit) error {
	for _, c := range cs {
		if err := s.commit(id, c); err != nil {
			return err
		}
	}
	return nil
}

func data(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func (s *scriptedStarter) drive(id string) error {
	args := json.RawMessage(`{"channel":"blog","title":"Durable agents"}`)
	hash, _ := run.ArgsHash(args)
	steps := []store.Commit{
		{Run: &store.RunPatch{Status: run.StatusRunning}, Events: []run.Event{{Type: run.EventTurnStarted}}},
		{Events: []run.Event{{Type: run.EventToolStarted, PlanItemID: "pi1", Data: data(map[string]any{"tool": "collect", "order": 1, "of": 2})}}},
		{Events: []run.Event{{Type: run.EventToolProgress, PlanItemID: "pi1", Data: data(map[string]any{"tool": "collect", "done": 40, "total": 100, "note": "source 40"})}}},
		{Events: []run.Event{{Type: run.EventToolProgress, PlanItemID: "pi1", Data: data(map[string]any{"done": 100, "total": 100})}}},
		{Events: []run.Event{{Type: run.EventToolCompleted, PlanItemID: "pi1"}}},
		{
			Run:          &store.RunPatch{Status: run.StatusAwaitingApproval},
			PlanItems:    []run.PlanItem{{ID: "pi2", Order: 2, Tool: "publish", Args: args, Mode: run.ModeMutating, Status: run.PlanAwaitingApproval}},
			NewApprovals: []run.Approval{{ID: "apr_1", PlanItemID: "pi2", Tool: "publish", Mode: run.ModeMutating, Args: args}},
			Events:       []run.Event{{Type: run.EventApprovalRequested, PlanItemID: "pi2", Data: data(map[string]any{"approval_id": "apr_1", "tool": "publish", "mode": "mutating", "args_hash": hash, "args": args})}},
		},
	}
	for _, c := range steps {
		if err := s.commit(id, c); err != nil {
			return err
		}
	}
	for { // the durable wait: in Keel, a task token; here, polling the store
		a, err := s.st.GetApproval(s.ctx, id, "apr_1")
		if err != nil {
			return err
		}
		if a.Status == run.ApprovalApproved {
			break
		}
		if a.Status != run.ApprovalPending {
			return s.commit(id, store.Commit{Run: &store.RunPatch{Status: run.StatusFailed, Error: ptr("publish " + string(a.Status))},
				Events: []run.Event{{Type: run.EventRunFailed}}})
		}
		select {
		case <-s.ctx.Done():
			return s.ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	return s.commitAll(id, store.Commit{
		Run: &store.RunPatch{Status: run.StatusRunning},
		Events: []run.Event{
			{Type: run.EventToolStarted, PlanItemID: "pi2", Data: data(map[string]any{"tool": "publish", "order": 2, "of": 2})},
			{Type: run.EventOpSucceeded, PlanItemID: "pi2", OperationID: "op_1", Data: data(map[string]any{"external_id": "post-7", "how": "dispatched"})},
			{Type: run.EventToolCompleted, PlanItemID: "pi2"},
		},
	}, store.Commit{
		Run:    &store.RunPatch{Status: run.StatusCompleted, Output: ptr("Published: Durable agents")},
		Events: []run.Event{{Type: run.EventRunCompleted}},
	})
}

func ptr[T any](v T) *T { return &v }

type testEnv struct {
	t       *testing.T
	st      *sqlite.Store
	srv     *httptest.Server
	starter *scriptedStarter
	dbPath  string
}

func newTestEnv(t *testing.T, script bool) *testEnv {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	dbPath := filepath.Join(t.TempDir(), "keel.db")
	st, err := sqlite.Open(ctx, dbPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	starter := &scriptedStarter{st: st, ctx: ctx, script: script}
	h, err := api.New(api.Deps{
		Instance: testInstance,
		Store:    st, Starter: starter, Resumer: noopResumer{},
		Auth: api.Tokens{token: "cli-user", "tok-other": "other"}, Agents: api.AgentSet{"research": {}},
		PollInterval: 2 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		cancel()
		srv.Close()
		starter.wg.Wait()
		st.Close()
		for _, err := range starter.errs {
			t.Errorf("scripted executor: %v", err)
		}
	})
	return &testEnv{t: t, st: st, srv: srv, starter: starter, dbPath: dbPath}
}

type noopResumer struct{}

func (noopResumer) Resume(context.Context, run.Approval) error { return nil }

// keel runs the CLI in-process against the test server.
func (e *testEnv) keel(stdin string, args ...string) (code int, stdout, stderr string) {
	return e.keelCtx(context.Background(), stdin, args...)
}

func (e *testEnv) keelCtx(ctx context.Context, stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb strings.Builder
	env := map[string]string{"KEEL_URL": e.srv.URL, "KEEL_TOKEN": token}
	c := &cli{stdin: bufio.NewReader(strings.NewReader(stdin)), stdout: &out, stderr: &errb,
		getenv: func(k string) string { return env[k] }}
	code = execute(ctx, args, c)
	return code, out.String(), errb.String()
}

func (e *testEnv) waitApproval(runID string) {
	e.t.Helper()
	for {
		if a, err := e.st.GetApproval(context.Background(), runID, "apr_1"); err == nil && a.Status == run.ApprovalPending {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (e *testEnv) onlyRun() api.Run {
	e.t.Helper()
	page, err := e.st.ListRuns(context.Background(), store.ListRunsQuery{Owner: "cli-user"})
	if err != nil || len(page.Runs) == 0 {
		e.t.Fatalf("runs: %v %v", page.Runs, err)
	}
	return api.Run{RunID: page.Runs[0].ID, Status: page.Runs[0].Status}
}

// TestRunWatchApprove is the whole loop through the CLI: start a run with
// --watch, see its progress and the approval it waits on, approve it from
// a second command, and see it complete.
func TestRunWatchApprove(t *testing.T) {
	e := newTestEnv(t, true)
	type result struct {
		code        int
		out, errout string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errout := e.keel("", "run", "--watch", "research", "write", "about", "durable", "agents")
		done <- result{code, out, errout}
	}()
	var id string
	for id == "" {
		page, err := e.st.ListRuns(context.Background(), store.ListRunsQuery{Owner: "cli-user"})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Runs) > 0 {
			id = page.Runs[0].ID
		} else {
			time.Sleep(2 * time.Millisecond)
		}
	}
	e.waitApproval(id)

	code, out, errout := e.keel("", "approve", "--yes", id)
	if code != 0 {
		t.Fatalf("approve: %d %s %s", code, out, errout)
	}
	for _, want := range []string{`"channel": "blog"`, "publish (mutating)", "args_hash ", "is approved"} {
		if !strings.Contains(out, want) {
			t.Errorf("approve output lacks %q:\n%s", want, out)
		}
	}
	res := <-done
	if res.code != 0 {
		t.Fatalf("run --watch: exit %d\n%s\n%s", res.code, res.out, res.errout)
	}
	r, err := e.st.GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Request != "write about durable agents" {
		t.Errorf("request %q", r.Request)
	}
	for _, want := range []string{
		"run " + id + " started",
		"▶ [1/2] collect",
		"collect 40/100 [########............] source 40",
		"collect 100/100",
		"✓ [1/2] collect",
		"waiting for approval apr_1: publish, args_hash",
		"keel approve " + id + " apr_1",
		"▶ [2/2] publish",
		"effect recorded: op op_1 external id post-7",
		`args {"channel":"blog","title":"Durable agents"}`,
		"■ completed",
		"run " + id + " completed",
		"Published: Durable agents",
	} {
		if !strings.Contains(res.out, want) {
			t.Errorf("watch output lacks %q:\n%s", want, res.out)
		}
	}
	// The log through `events`, page by page and followed: the same lines.
	code, evOut, _ := e.keel("", "events", id)
	code2, evF, _ := e.keel("", "events", "-f", id)
	if code != 0 || code2 != 0 || evOut != evF || !strings.Contains(evOut, "approval_granted") || strings.Count(evOut, "\n") != int(r.LastSeq) {
		t.Errorf("events (%d, %d):\n%s\n---\n%s", code, code2, evOut, evF)
	}
}

func TestApprovePrompt(t *testing.T) {
	e := newTestEnv(t, true)
	code, out, errout := e.keel("", "run", "research", "x")
	if code != 0 {
		t.Fatalf("run: %d %s %s", code, out, errout)
	}
	id := e.onlyRun().RunID
	e.waitApproval(id)
	ctx := context.Background()

	for _, answer := range []string{"n\n", "", "maybe\n"} {
		code, out, errout := e.keel(answer, "approve", id, "apr_1")
		if code != 1 || !strings.Contains(out, "Approve this exact action? [y/N]") || !strings.Contains(errout, "nothing was sent") {
			t.Errorf("answer %q: %d\n%s\n%s", answer, code, out, errout)
		}
		if a, _ := e.st.GetApproval(ctx, id, "apr_1"); a.Status != run.ApprovalPending {
			t.Fatalf("answer %q changed the approval to %s", answer, a.Status)
		}
	}
	code, out, errout = e.keel("y\n", "deny", "--reason", "wrong channel", id)
	if code != 0 || !strings.Contains(out, "is denied") {
		t.Fatalf("deny: %d %s %s", code, out, errout)
	}
	if a, _ := e.st.GetApproval(ctx, id, "apr_1"); a.Status != run.ApprovalDenied || a.Reason != "wrong channel" || a.DecidedBy != "cli-user" {
		t.Errorf("approval %+v", a)
	}
	code, _, errout = e.keel("", "approve", "--yes", id, "apr_1")
	if code != exitConflict || !strings.Contains(errout, "already denied") {
		t.Errorf("approve after deny: %d %s", code, errout)
	}
}

func TestCommands(t *testing.T) {
	e := newTestEnv(t, false)
	ctx := context.Background()
	code, out, errout := e.keel("survey the field\n", "run", "--json", "--session", "ses_cli", "--max-steps", "9", "--max-spend-usd", "1.5", "--input-policy", "interrupt", "research", "-", "--idempotency-key", "key-1")
	if code != 0 {
		t.Fatalf("run: %d %s %s", code, out, errout)
	}
	var r api.Run
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("run --json: %v\n%s", err, out)
	}
	if r.SessionID != "ses_cli" || r.Limits.MaxSteps != 9 || r.Limits.MaxSpendMicroUSD != 1_500_000 || r.InputPolicy != run.InputInterrupt || r.IdempotencyKey != "key-1" {
		t.Errorf("run %+v", r)
	}
	// The same key and request: the same run.
	if code, out, _ := e.keel("survey the field\n", "run", "--idempotency-key", "key-1", "--session", "ses_cli", "--max-steps", "9", "--max-spend-usd", "1.5", "--input-policy", "interrupt", "research", "-"); code != 0 || !strings.Contains(out, r.RunID+" already exists") {
		t.Errorf("rerun: %d %s", code, out)
	}
	// The same key with other limits: refused, not silently the old run.
	if code, _, errout := e.keel("survey the field\n", "run", "--idempotency-key", "key-1", "--session", "ses_cli", "research", "-"); code != exitConflict || !strings.Contains(errout, "idempotency_key_reused") {
		t.Errorf("rerun with other limits: %d %s", code, errout)
	}

	code, out, _ = e.keel("", "runs")
	if code != 0 || !strings.Contains(out, r.RunID) || !strings.Contains(out, "created") {
		t.Errorf("runs: %d %s", code, out)
	}
	code, out, _ = e.keel("", "show", r.RunID)
	if code != 0 || !strings.Contains(out, "steps         0 of 9") || !strings.Contains(out, "ses_cli") {
		t.Errorf("show: %d %s", code, out)
	}
	code, out, _ = e.keel("", "input", r.RunID, "also", "2024")
	if ins, _ := e.st.ListInputs(ctx, r.RunID, true); code != 0 || len(ins) != 1 || ins[0].Text != "also 2024" || !strings.Contains(out, "policy interrupt") {
		t.Errorf("input: %d %s %v", code, out, ins)
	}

	// A checkpoint to fork from, written the way the harness does.
	lease, err := e.st.AcquireLease(ctx, r.RunID, "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cp := run.Checkpoint{ID: "cp_1", Seq: 1, Step: 1, State: []byte(`{}`)}
	if _, err := e.st.Commit(ctx, store.Commit{RunID: r.RunID, Token: lease.Lease.Token, Checkpoint: &cp,
		Run: &store.RunPatch{CheckpointID: "cp_1", ReleaseLease: true}}); err != nil {
		t.Fatal(err)
	}
	code, out, _ = e.keel("", "checkpoints", r.RunID)
	if code != 0 || !strings.Contains(out, "cp_1") {
		t.Errorf("checkpoints: %d %s", code, out)
	}
	code, out, errout = e.keel("", "fork", r.RunID) // default: the current checkpoint
	if code != 0 || !strings.Contains(out, "from run "+r.RunID+" at checkpoint cp_1") {
		t.Fatalf("fork: %d %s %s", code, out, errout)
	}
	code, out, _ = e.keel("", "cancel", r.RunID)
	if got, _ := e.st.GetRun(ctx, r.RunID); code != 0 || !got.CancelRequested || !strings.Contains(out, "cancel requested") {
		t.Errorf("cancel: %d %s", code, out)
	}
}

// TestErrors checks exit codes and that each error names the flag or
// argument at fault, with nothing stored changed.
func TestErrors(t *testing.T) {
	e := newTestEnv(t, false)
	ctx := context.Background()
	mk := func(p run.InputPolicy, st ...run.Status) string {
		r, _, err := e.st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: run.NewID("ses"), Owner: "cli-user", Agent: "research", Request: "x", InputPolicy: p})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range st {
			l, _ := e.st.AcquireLease(ctx, r.ID, "w", time.Minute)
			if _, err := e.st.Commit(ctx, store.Commit{RunID: r.ID, Token: l.Lease.Token, Run: &store.RunPatch{Status: s, ReleaseLease: true}}); err != nil {
				t.Fatal(err)
			}
		}
		return r.ID
	}
	active := mk(run.InputReject)
	finished := mk(run.InputQueue, run.StatusFailed)
	cases := []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"no command", nil, exitUsage, "usage: keel"},
		{"unknown command", []string{"launch"}, exitUsage, `unknown command "launch"`},
		{"dev with a bad address", []string{"dev", "--addr", "nope", "--data-dir", t.TempDir()}, exitUsage, `--addr "nope"`},
		{"dev with a bad store", []string{"dev", "--store", "postgres", "--data-dir", t.TempDir()}, exitUsage, "--store"},
		{"step without a run", []string{"step"}, exitUsage, "RUN_ID"},
		{"unknown flag", []string{"runs", "--colour"}, exitUsage, "-colour"},
		{"show without id", []string{"show"}, exitUsage, "missing argument RUN_ID"},
		{"show two ids", []string{"show", "a", "b"}, exitUsage, `unexpected argument "b"`},
		{"show unknown run", []string{"show", "run_nope"}, exitNotFound, "not_found"},
		{"run without input", []string{"run", "research"}, exitUsage, "missing argument INPUT"},
		{"run unknown agent", []string{"run", "nope", "x"}, exitUsage, "[AGENT]"},
		{"run negative steps", []string{"run", "--max-steps", "-1", "research", "x"}, exitUsage, "[--max-steps]"},
		{"run bad session", []string{"run", "--session", "a b", "research", "x"}, exitUsage, "[--session]"},
		{"run bad policy", []string{"run", "--input-policy", "later", "research", "x"}, exitUsage, "[--input-policy]"},
		{"run bad deadline", []string{"run", "--deadline", "soon", "research", "x"}, exitUsage, "-deadline"},
		{"runs bad status", []string{"runs", "--status", "asleep"}, exitUsage, "--status"},
		{"runs bad limit", []string{"runs", "--limit", "0"}, exitUsage, "--limit"},
		{"events negative after", []string{"events", "--after", "-2", active}, exitUsage, "--after"},
		{"input rejected", []string{"input", active, "more"}, exitConflict, "input_rejected"},
		{"input finished", []string{"input", finished, "more"}, exitConflict, "run_finished"},
		{"cancel finished", []string{"cancel", finished}, exitConflict, "run_finished"},
		{"approve nothing pending", []string{"approve", "--yes", active}, exitConflict, "no pending approval"},
		{"approve unknown approval", []string{"approve", "--yes", active, "apr_nope"}, exitNotFound, "not_found"},
		{"fork no checkpoint", []string{"fork", active}, exitUsage, "--checkpoint is required"},
		{"fork unknown checkpoint", []string{"fork", "--checkpoint", "cp_nope", active}, exitNotFound, "[--checkpoint]"},
		{"bad token", []string{"--token", "wrong", "runs"}, exitFailure, "KEEL_TOKEN"},
		{"bad url", []string{"--url", "ftp://x", "runs"}, exitUsage, "--url"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, _ := e.st.ListRuns(ctx, store.ListRunsQuery{})
			code, out, errout := e.keel("", c.args...)
			if code != c.code || !strings.Contains(errout, c.want) {
				t.Errorf("exit %d (want %d), stderr %q (want %q), stdout %q", code, c.code, errout, c.want, out)
			}
			after, _ := e.st.ListRuns(ctx, store.ListRunsQuery{})
			if fmt.Sprint(before) != fmt.Sprint(after) {
				t.Error("the runs changed")
			}
		})
	}
	t.Run("no url", func(t *testing.T) {
		c := &cli{dir: t.TempDir(), stdin: bufio.NewReader(strings.NewReader("")), stdout: &strings.Builder{}, stderr: &strings.Builder{}, getenv: func(string) string { return "" }}
		if code := execute(ctx, []string{"runs"}, c); code != exitUsage || !strings.Contains(c.stderr.(*strings.Builder).String(), "KEEL_URL") {
			t.Errorf("exit %d, %s", code, c.stderr)
		}
	})
	t.Run("help", func(t *testing.T) {
		code, out, _ := e.keel("", "run", "-h")
		if code != 0 || !strings.Contains(out, "-watch") {
			t.Errorf("help: %d %s", code, out)
		}
	})
}

func TestWatchInterrupted(t *testing.T) {
	e := newTestEnv(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if page, _ := e.st.ListRuns(context.Background(), store.ListRunsQuery{}); len(page.Runs) > 0 {
				e.waitApproval(page.Runs[0].ID)
				cancel()
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	code, _, errout := e.keelCtx(ctx, "", "run", "--watch", "research", "x")
	if code != exitInterrupted || !strings.Contains(errout, "the run goes on: keel events -f") {
		t.Errorf("exit %d, %s", code, errout)
	}
}
