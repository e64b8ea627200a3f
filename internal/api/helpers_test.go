package api_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/api"
	artfs "github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// Tokens of the two principals every test uses.
const (
	aliceToken = "tok-alice"
	bobToken   = "tok-bob"
)

// recStarter records StartRun calls; err, when set, fails them.
type recStarter struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (s *recStarter) StartRun(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, id)
	return s.err
}

func (s *recStarter) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

func (s *recStarter) setErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// recResumer records Resume calls; err, when set, fails them.
type recResumer struct {
	mu    sync.Mutex
	calls []run.Approval
	err   error
}

func (r *recResumer) Resume(_ context.Context, a run.Approval) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, a)
	return r.err
}

func (r *recResumer) Calls() []run.Approval {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]run.Approval(nil), r.calls...)
}

func (r *recResumer) setErr(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

// env is one API over a fresh SQLite file.
type env struct {
	t       *testing.T
	path    string
	store   *sqlite.Store
	starter *recStarter
	resumer *recResumer
	arts    *artfs.Store
	logs    *syncBuffer
	srv     *httptest.Server
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newEnv starts the API on a fresh store. wrap, when given, wraps the store
// the API sees (failure injection around the real backend).
func newEnv(t *testing.T, wrap func(api.Store) api.Store) *env {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keel.db")
	st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	arts, err := artfs.New(filepath.Join(filepath.Dir(path), "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, path: path, store: st, starter: &recStarter{}, resumer: &recResumer{}, arts: arts, logs: &syncBuffer{}}
	var as api.Store = st
	if wrap != nil {
		as = wrap(st)
	}
	h, err := api.New(api.Deps{
		Store: as, Starter: e.starter, Resumer: e.resumer, Artifacts: e.arts, Records: st,
		Deployment: fixedDeployment{},
		Auth:       api.Tokens{aliceToken: "alice", bobToken: "bob"},
		Agents: api.AgentSet{"research": {}, "echo": {},
			// An agent with its own run defaults (keel.Agent.Limits, InputPolicy).
			"bounded": {Limits: run.Limits{MaxSteps: 7, MaxSpendMicroUSD: 1_000}, Timeout: time.Hour, InputPolicy: run.InputReject}},
		Logger:       slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		PollInterval: 5 * time.Millisecond,
		KeepAlive:    20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(h)
	t.Cleanup(e.srv.Close)
	return e
}

// do sends a request as the holder of token ("" for none) and returns the
// status, headers and body.
func (e *env) do(method, path, token, body string, hdr map[string]string) (int, http.Header, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// doJSON sends a request and decodes a 2xx answer into out (strictly).
func (e *env) doJSON(method, path, token, body string, hdr map[string]string, wantStatus int, out any) http.Header {
	e.t.Helper()
	st, h, b := e.do(method, path, token, body, hdr)
	if st != wantStatus {
		e.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, st, wantStatus, b)
	}
	if out != nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(out); err != nil {
			e.t.Fatalf("%s %s: decoding %s: %v", method, path, b, err)
		}
	}
	return h
}

// dump returns every row of every table of the store's file, sorted: the
// store's whole content, to compare before and after a refused request.
func (e *env) dump() string {
	e.t.Helper()
	db, err := sql.Open("sqlite", "file:"+e.path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		e.t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			e.t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	var out strings.Builder
	for _, tb := range tables {
		rs, err := db.Query(`SELECT * FROM "` + tb + `"`)
		if err != nil {
			e.t.Fatal(err)
		}
		cols, _ := rs.Columns()
		var lines []string
		for rs.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rs.Scan(ptrs...); err != nil {
				e.t.Fatal(err)
			}
			var ln strings.Builder
			for i, v := range vals {
				if b, ok := v.([]byte); ok {
					v = string(b)
				}
				fmt.Fprintf(&ln, "%s=%v ", cols[i], v)
			}
			lines = append(lines, ln.String())
		}
		rs.Close()
		sort.Strings(lines)
		fmt.Fprintf(&out, "== %s (%d)\n%s\n", tb, len(lines), strings.Join(lines, "\n"))
	}
	return out.String()
}

// Fixtures, written through the real store the way the harness writes them.

func (e *env) newRun(owner string, policy run.InputPolicy) run.Run {
	e.t.Helper()
	r, _, err := e.store.CreateRun(context.Background(), run.Run{
		ID: run.NewID("run"), SessionID: run.NewID("ses"), Owner: owner, Agent: "research",
		Request: "find things", InputPolicy: policy, Limits: run.DefaultLimits(),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// commit applies c to the run under a fresh lease.
func (e *env) commit(runID string, c store.Commit) []int64 {
	e.t.Helper()
	ctx := context.Background()
	r, err := e.store.AcquireLease(ctx, runID, "worker", time.Minute)
	if err != nil {
		e.t.Fatal(err)
	}
	c.RunID, c.Token = runID, r.Lease.Token
	if c.Run == nil {
		c.Run = &store.RunPatch{}
	}
	c.Run.ReleaseLease = true
	seqs, err := e.store.Commit(ctx, c)
	if err != nil {
		e.t.Fatalf("commit: %v", err)
	}
	return seqs
}

func (e *env) setStatus(runID string, statuses ...run.Status) {
	e.t.Helper()
	for _, s := range statuses {
		e.commit(runID, store.Commit{Run: &store.RunPatch{Status: s}})
	}
}

// awaitApproval moves a created run to awaiting_approval with one pending
// approval for a publish of the given args.
func (e *env) awaitApproval(runID, args string) run.Approval {
	e.t.Helper()
	id := run.NewID("apr")
	pi := run.NewID("pi")
	h, err := run.ArgsHash([]byte(args))
	if err != nil {
		e.t.Fatal(err)
	}
	e.commit(runID, store.Commit{
		Run:       &store.RunPatch{Status: run.StatusRunning},
		PlanItems: []run.PlanItem{{ID: pi, Order: 1, Tool: "publish", Args: json.RawMessage(args), ArgsHash: h, Mode: run.ModeMutating, Status: run.PlanAwaitingApproval}},
	})
	e.commit(runID, store.Commit{
		Run:          &store.RunPatch{Status: run.StatusAwaitingApproval},
		NewApprovals: []run.Approval{{ID: id, PlanItemID: pi, Tool: "publish", Mode: run.ModeMutating, Args: json.RawMessage(args), ArgsHash: h}},
		Events:       []run.Event{{Type: run.EventApprovalRequested, PlanItemID: pi, Data: json.RawMessage(`{"approval_id":"` + id + `","tool":"publish","args_hash":"` + h + `"}`)}},
	})
	a, err := e.store.GetApproval(context.Background(), runID, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

func (e *env) checkpoint(runID string, seq int64) run.Checkpoint {
	e.t.Helper()
	cp := run.Checkpoint{ID: run.NewCheckpointID(seq), Seq: seq, Step: seq, State: []byte(`{"messages":[]}`)}
	e.commit(runID, store.Commit{Checkpoint: &cp, Run: &store.RunPatch{CheckpointID: cp.ID, StepsDelta: 1}})
	got, err := e.store.GetCheckpoint(context.Background(), runID, cp.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}
