package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

func TestNewRequiresDeps(t *testing.T) {
	if _, err := api.New(api.Deps{}); err == nil {
		t.Fatal("New without dependencies succeeded")
	}
}

func TestHealthz(t *testing.T) {
	e := newEnv(t, nil)
	var got map[string]string
	e.doJSON("GET", "/healthz", "", "", nil, 200, &got)
	if got["status"] != "ok" {
		t.Fatalf("healthz %v", got)
	}
}

func TestCreateRun(t *testing.T) {
	e := newEnv(t, nil)
	var v api.Run
	h := e.doJSON("POST", "/v1/runs", aliceToken, `{"agent":"research","input":"survey durable runtimes"}`, nil, 201, &v)
	if h.Get("Location") != "/v1/runs/"+v.RunID || !strings.HasPrefix(v.RunID, "run_") {
		t.Errorf("Location %q for %q", h.Get("Location"), v.RunID)
	}
	if v.Status != run.StatusCreated || v.Owner != "alice" || v.Agent != "research" || v.Input != "survey durable runtimes" ||
		v.InputPolicy != run.InputQueue || v.Limits != run.DefaultLimits() || !strings.HasPrefix(v.SessionID, "ses_") ||
		v.Counters.Events != 1 || v.Links.Events != "/v1/runs/"+v.RunID+"/events" {
		t.Errorf("created run %+v", v)
	}
	if got := e.starter.Calls(); len(got) != 1 || got[0] != v.RunID {
		t.Errorf("StartRun calls %v", got)
	}
	var g api.Run
	e.doJSON("GET", "/v1/runs/"+v.RunID, aliceToken, "", nil, 200, &g)
	if g.RunID != v.RunID || g.Status != run.StatusCreated {
		t.Errorf("get %+v", g)
	}

	t.Run("explicit session, policy and limits", func(t *testing.T) {
		deadline := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
		body := fmt.Sprintf(`{"agent":"echo","input":"x","session_id":%q,"input_policy":"interrupt","limits":{"max_steps":7,"deadline":%q}}`,
			v.SessionID, deadline.Format(time.RFC3339))
		var w api.Run
		e.doJSON("POST", "/v1/runs", aliceToken, body, nil, 201, &w)
		want := run.DefaultLimits()
		want.MaxSteps, want.Deadline = 7, deadline
		if w.SessionID != v.SessionID || w.InputPolicy != run.InputInterrupt || !w.Limits.Deadline.Equal(deadline) || w.Limits.MaxSteps != 7 || w.Limits.MaxTokens != want.MaxTokens {
			t.Errorf("run %+v", w)
		}
	})

	t.Run("idempotency key", func(t *testing.T) {
		hdr := map[string]string{"Idempotency-Key": "order-42"}
		var a, b, c api.Run
		e.doJSON("POST", "/v1/runs", aliceToken, `{"agent":"research","input":"once"}`, hdr, 201, &a)
		e.doJSON("POST", "/v1/runs", aliceToken, `{"agent":"research","input":"once"}`, hdr, 200, &b)
		if a.RunID != b.RunID || b.IdempotencyKey != "order-42" {
			t.Errorf("retry gave %s, first %s", b.RunID, a.RunID)
		}
		// The start is repeated (the Starter is idempotent), so a crash
		// between storing and starting heals on retry.
		n := 0
		for _, id := range e.starter.Calls() {
			if id == a.RunID {
				n++
			}
		}
		if n != 2 {
			t.Errorf("StartRun called %d times for the run, want 2", n)
		}
		// Keys are per principal.
		e.doJSON("POST", "/v1/runs", bobToken, `{"agent":"research","input":"once"}`, hdr, 201, &c)
		if c.RunID == a.RunID {
			t.Error("bob got alice's run for the same key")
		}
	})
}

func TestStartFailureHeals(t *testing.T) {
	e := newEnv(t, nil)
	e.starter.setErr(errors.New("executor down: secret-detail"))
	hdr := map[string]string{"Idempotency-Key": "k"}
	st, _, body := e.do("POST", "/v1/runs", aliceToken, `{"agent":"research","input":"x"}`, hdr)
	if st != 503 || !strings.Contains(string(body), api.CodeStartFailed) || strings.Contains(string(body), "secret-detail") {
		t.Fatalf("status %d body %s", st, body)
	}
	if !strings.Contains(e.logs.String(), "secret-detail") {
		t.Error("the start failure was not logged")
	}
	page, err := e.store.ListRuns(context.Background(), store.ListRunsQuery{Owner: "alice"})
	if err != nil || len(page.Runs) != 1 {
		t.Fatalf("runs %v %v", page.Runs, err)
	}
	e.starter.setErr(nil)
	var v api.Run
	e.doJSON("POST", "/v1/runs", aliceToken, `{"agent":"research","input":"x"}`, hdr, 200, &v)
	if v.RunID != page.Runs[0].ID {
		t.Errorf("retry gave %s, stored %s", v.RunID, page.Runs[0].ID)
	}
}

func TestListRuns(t *testing.T) {
	e := newEnv(t, nil)
	var ids []string
	var sess string
	for i := range 3 {
		var v api.Run
		body := fmt.Sprintf(`{"agent":"research","input":"run %d"}`, i)
		if sess != "" {
			body = fmt.Sprintf(`{"agent":"research","input":"run %d","session_id":%q}`, i, sess)
		}
		e.doJSON("POST", "/v1/runs", aliceToken, body, nil, 201, &v)
		ids = append(ids, v.RunID)
		if i == 0 {
			sess = "ses_custom"
		}
	}
	e.doJSON("POST", "/v1/runs", bobToken, `{"agent":"research","input":"bob"}`, nil, 201, nil)
	e.setStatus(ids[0], run.StatusRunning)

	var all api.RunList
	e.doJSON("GET", "/v1/runs", aliceToken, "", nil, 200, &all)
	if len(all.Runs) != 3 || all.NextPageToken != "" {
		t.Fatalf("alice sees %d runs (token %q)", len(all.Runs), all.NextPageToken)
	}
	for i, r := range all.Runs {
		if r.Owner != "alice" || r.RunID != ids[2-i] {
			t.Errorf("run %d: %s of %s, want %s newest first", i, r.RunID, r.Owner, ids[2-i])
		}
	}
	var p1, p2 api.RunList
	e.doJSON("GET", "/v1/runs?limit=2", aliceToken, "", nil, 200, &p1)
	if len(p1.Runs) != 2 || p1.NextPageToken == "" {
		t.Fatalf("page 1: %d runs, token %q", len(p1.Runs), p1.NextPageToken)
	}
	e.doJSON("GET", "/v1/runs?limit=2&page_token="+p1.NextPageToken, aliceToken, "", nil, 200, &p2)
	if len(p2.Runs) != 1 || p2.Runs[0].RunID != ids[0] || p2.NextPageToken != "" {
		t.Fatalf("page 2: %+v", p2)
	}
	var running, inSess api.RunList
	e.doJSON("GET", "/v1/runs?status=running", aliceToken, "", nil, 200, &running)
	if len(running.Runs) != 1 || running.Runs[0].RunID != ids[0] {
		t.Errorf("status filter: %+v", running.Runs)
	}
	e.doJSON("GET", "/v1/runs?session_id=ses_custom", aliceToken, "", nil, 200, &inSess)
	if len(inSess.Runs) != 2 {
		t.Errorf("session filter: %d runs", len(inSess.Runs))
	}
	// A child run of ids[0], as a sub-agent call starts one.
	childID := run.ChildRunID(ids[0], "op_1")
	if _, _, err := e.store.CreateRun(context.Background(), run.Run{ID: childID, SessionID: "sub_1", Owner: "alice", Agent: "research",
		Request: "part", Limits: run.DefaultLimits(), Caller: run.Caller{RunID: ids[0], PlanItemID: "item_1", OperationID: "op_1", Depth: 1}}); err != nil {
		t.Fatal(err)
	}
	var kids api.RunList
	e.doJSON("GET", "/v1/runs?parent="+ids[0], aliceToken, "", nil, 200, &kids)
	if len(kids.Runs) != 1 || kids.Runs[0].RunID != childID || kids.Runs[0].Caller == nil || kids.Runs[0].Caller.RunID != ids[0] {
		t.Errorf("parent filter: %+v", kids.Runs)
	}
	e.doJSON("GET", "/v1/runs?parent="+ids[0], bobToken, "", nil, 200, &kids)
	if len(kids.Runs) != 0 {
		t.Errorf("bob sees alice's children: %+v", kids.Runs)
	}
}

func TestEventsPage(t *testing.T) {
	e := newEnv(t, nil)
	r := e.newRun("alice", run.InputQueue)
	if _, err := e.store.AppendEvents(context.Background(), r.ID, []run.Event{
		{Type: run.EventTurnStarted}, {Type: run.EventToolProgress, Data: json.RawMessage(`{"done":40,"total":100}`)},
	}); err != nil {
		t.Fatal(err)
	}
	var p api.EventPage
	e.doJSON("GET", "/v1/runs/"+r.ID+"/events?after=0&limit=2", aliceToken, "", nil, 200, &p)
	if len(p.Events) != 2 || p.Events[0].Seq != 1 || p.Events[0].Type != run.EventRunCreated || p.NextAfter != 2 || p.Done {
		t.Fatalf("page %+v", p)
	}
	e.doJSON("GET", fmt.Sprintf("/v1/runs/%s/events?after=%d", r.ID, p.NextAfter), aliceToken, "", nil, 200, &p)
	if len(p.Events) != 1 || string(p.Events[0].Data) != `{"done":40,"total":100}` || p.NextAfter != 3 || p.Done {
		t.Fatalf("page 2 %+v", p)
	}
	e.setStatus(r.ID, run.StatusFailed)
	e.doJSON("GET", fmt.Sprintf("/v1/runs/%s/events?after=%d", r.ID, p.NextAfter), aliceToken, "", nil, 200, &p)
	if !p.Done || p.Status != run.StatusFailed {
		t.Fatalf("after the end: %+v", p)
	}
}

func TestDecide(t *testing.T) {
	for _, decision := range []string{api.DecisionApprove, api.DecisionDeny} {
		t.Run(decision, func(t *testing.T) {
			e := newEnv(t, nil)
			ctx := context.Background()
			r := e.newRun("alice", run.InputQueue)
			a := e.awaitApproval(r.ID, `{"channel":"blog","post":"draft"}`)
			if _, err := e.store.AttachTaskToken(ctx, r.ID, a.ID, "task-token-1"); err != nil {
				t.Fatal(err)
			}
			var list api.ApprovalList
			e.doJSON("GET", "/v1/runs/"+r.ID+"/approvals", aliceToken, "", nil, 200, &list)
			if len(list.Approvals) != 1 || list.Approvals[0].ArgsHash != a.ArgsHash || list.Approvals[0].Tool != "publish" ||
				string(list.Approvals[0].Args) != `{"channel":"blog","post":"draft"}` {
				t.Fatalf("approvals %+v", list)
			}
			body := fmt.Sprintf(`{"decision":%q,"args_hash":%q,"reason":"looks right"}`, decision, a.ArgsHash)
			var got api.Approval
			e.doJSON("POST", "/v1/runs/"+r.ID+"/approvals/"+a.ID, aliceToken, body, nil, 200, &got)
			want := run.ApprovalApproved
			if decision == api.DecisionDeny {
				want = run.ApprovalDenied
			}
			if got.Status != want || got.DecidedBy != "alice" || got.Reason != "looks right" {
				t.Errorf("decided %+v", got)
			}
			calls := e.resumer.Calls()
			if len(calls) != 1 || calls[0].ID != a.ID || calls[0].TaskToken != "task-token-1" || calls[0].Status != want {
				t.Fatalf("Resume calls %+v", calls)
			}
			if strings.Contains(e.logs.String(), "task-token-1") {
				t.Error("the task token reached the log")
			}
			// The same decision again is 409, and wakes the wait again
			// (how a client heals after resume_failed).
			st, _, b := e.do("POST", "/v1/runs/"+r.ID+"/approvals/"+a.ID, aliceToken, body, nil)
			if st != 409 || !strings.Contains(string(b), api.CodeApprovalNotPending) || len(e.resumer.Calls()) != 2 {
				t.Errorf("repeat: %d %s, %d resumes", st, b, len(e.resumer.Calls()))
			}
		})
	}
}

func TestResumeFailure(t *testing.T) {
	e := newEnv(t, nil)
	r := e.newRun("alice", run.InputQueue)
	a := e.awaitApproval(r.ID, `{"post":"p"}`)
	e.resumer.setErr(errors.New("SendTaskSuccess: throttled secret-detail"))
	body := fmt.Sprintf(`{"decision":"approve","args_hash":%q}`, a.ArgsHash)
	st, _, b := e.do("POST", "/v1/runs/"+r.ID+"/approvals/"+a.ID, aliceToken, body, nil)
	if st != 503 || !strings.Contains(string(b), api.CodeResumeFailed) || strings.Contains(string(b), "secret-detail") {
		t.Fatalf("%d %s", st, b)
	}
	stored, err := e.store.GetApproval(context.Background(), r.ID, a.ID)
	if err != nil || stored.Status != run.ApprovalApproved {
		t.Fatalf("the decision is not stored: %+v %v", stored, err)
	}
	e.resumer.setErr(nil)
	st, _, _ = e.do("POST", "/v1/runs/"+r.ID+"/approvals/"+a.ID, aliceToken, body, nil)
	if calls := e.resumer.Calls(); st != 409 || len(calls) != 2 || calls[1].ID != a.ID {
		t.Fatalf("retry: %d, resumes %+v", st, calls)
	}
}

func TestCancel(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	r := e.newRun("alice", run.InputQueue)
	a := e.awaitApproval(r.ID, `{"post":"p"}`)
	var got api.CancelResponse
	e.doJSON("POST", "/v1/runs/"+r.ID+"/cancel", aliceToken, "", nil, 202, &got)
	if !got.Run.CancelRequested || len(got.CancelledApprovals) != 1 || got.CancelledApprovals[0].Status != run.ApprovalCancelled {
		t.Fatalf("cancel %+v", got)
	}
	if calls := e.resumer.Calls(); len(calls) != 1 || calls[0].ID != a.ID {
		t.Fatalf("Resume calls %+v", calls)
	}
	if stored, _ := e.store.GetApproval(ctx, r.ID, a.ID); stored.Status != run.ApprovalCancelled {
		t.Errorf("approval %s", stored.Status)
	}
	// Again, with {}: still accepted, and the withdrawn wait is woken again.
	e.doJSON("POST", "/v1/runs/"+r.ID+"/cancel", aliceToken, "{}", nil, 202, &got)
	if len(got.CancelledApprovals) != 0 || len(e.resumer.Calls()) != 2 {
		t.Errorf("repeat: %+v, %d resumes", got, len(e.resumer.Calls()))
	}
}

func TestInput(t *testing.T) {
	for _, p := range []run.InputPolicy{run.InputQueue, run.InputInterrupt} {
		t.Run(string(p), func(t *testing.T) {
			e := newEnv(t, nil)
			r := e.newRun("alice", p)
			var got api.InputResponse
			e.doJSON("POST", "/v1/runs/"+r.ID+"/input", aliceToken, `{"text":"also check the 2024 figures"}`, nil, 202, &got)
			ins, err := e.store.ListInputs(context.Background(), r.ID, true)
			if err != nil || len(ins) != 1 || ins[0].ID != got.InputID || ins[0].Text != "also check the 2024 figures" || got.Policy != p {
				t.Fatalf("inputs %+v %v, answer %+v", ins, err, got)
			}
		})
	}
}

func TestFork(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	parent := e.newRun("alice", run.InputRollback)
	cp1 := e.checkpoint(parent.ID, 1)
	e.checkpoint(parent.ID, 2)
	var cps api.CheckpointPage
	e.doJSON("GET", "/v1/runs/"+parent.ID+"/checkpoints", aliceToken, "", nil, 200, &cps)
	if len(cps.Checkpoints) != 2 || cps.Checkpoints[0].CheckpointID != cp1.ID || cps.NextAfter != 2 || cps.Checkpoints[0].StateHash == "" {
		t.Fatalf("checkpoints %+v", cps)
	}
	hdr := map[string]string{"Idempotency-Key": "fork-1"}
	var child, again api.Run
	e.doJSON("POST", "/v1/runs/"+parent.ID+"/fork", aliceToken, `{"checkpoint_id":"`+cp1.ID+`"}`, hdr, 201, &child)
	if child.ParentRunID != parent.ID || child.ForkCheckpointID != cp1.ID || child.SessionID != parent.SessionID ||
		child.Agent != parent.Agent || child.Input != parent.Request || child.InputPolicy != run.InputRollback || child.Status != run.StatusCreated {
		t.Fatalf("child %+v", child)
	}
	if calls := e.starter.Calls(); len(calls) != 1 || calls[0] != child.RunID {
		t.Errorf("StartRun %v", calls)
	}
	evs, err := e.store.ReadEvents(ctx, parent.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if last.Type != run.EventRunForked || !strings.Contains(string(last.Data), child.RunID) {
		t.Errorf("parent's last event %+v", last)
	}
	e.doJSON("POST", "/v1/runs/"+parent.ID+"/fork", aliceToken, `{"checkpoint_id":"`+cp1.ID+`"}`, hdr, 200, &again)
	if again.RunID != child.RunID {
		t.Errorf("idempotent fork gave %s, first %s", again.RunID, child.RunID)
	}
	if n, _ := e.store.ReadEvents(ctx, parent.ID, 0, 100); len(n) != len(evs) {
		t.Error("the retried fork recorded run_forked again")
	}
}

func TestArtifacts(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	r := e.newRun("alice", run.InputQueue)
	cp := e.checkpoint(r.ID, 1)
	k := artifact.Key{RunID: r.ID, CheckpointID: cp.ID, Name: "report.md"}
	info, err := e.arts.Put(ctx, k, []byte("# Findings\n"))
	if err != nil {
		t.Fatal(err)
	}
	var list api.ArtifactList
	e.doJSON("GET", "/v1/runs/"+r.ID+"/artifacts", aliceToken, "", nil, 200, &list)
	if len(list.Artifacts) != 1 || list.Artifacts[0].SHA256 != info.SHA256 || list.Artifacts[0].Size != 11 {
		t.Fatalf("artifacts %+v", list)
	}
	st, h, b := e.do("GET", list.Artifacts[0].Href, aliceToken, "", nil)
	if st != 200 || string(b) != "# Findings\n" || h.Get("X-Content-SHA256") != info.SHA256 || h.Get("ETag") != `"`+info.SHA256+`"` ||
		!strings.Contains(h.Get("Content-Disposition"), "report.md") {
		t.Fatalf("download %d %q %v", st, b, h)
	}
	if st, _, _ := e.do("GET", list.Artifacts[0].Href, aliceToken, "", map[string]string{"If-None-Match": `"` + info.SHA256 + `"`}); st != 304 {
		t.Errorf("If-None-Match: %d", st)
	}
	// Flip a byte of the stored object behind the store's back.
	obj := e.arts.ObjectPath(info.SHA256)
	b0, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	b0[0] ^= 0xff
	if err := os.Chmod(obj, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(obj, b0, 0o644); err != nil {
		t.Fatal(err)
	}
	st, _, b = e.do("GET", list.Artifacts[0].Href, aliceToken, "", nil)
	if st != 500 || !strings.Contains(string(b), api.CodeArtifactCorrupt) || strings.Contains(string(b), "Findings") {
		t.Fatalf("corrupt download %d %s", st, b)
	}
}

// failingStore is the real store with GetRun failing on demand.
type failingStore struct {
	api.Store
	err error
}

func (f failingStore) GetRun(ctx context.Context, id string) (run.Run, error) {
	if f.err != nil {
		return run.Run{}, f.err
	}
	return f.Store.GetRun(ctx, id)
}

func TestInternalErrorNotLeaked(t *testing.T) {
	boom := errors.New("disk I/O error at /var/keel/secret-path")
	e := newEnv(t, func(s api.Store) api.Store { return failingStore{Store: s, err: boom} })
	st, _, b := e.do("GET", "/v1/runs/run_x", aliceToken, "", nil)
	if st != 500 || strings.Contains(string(b), "secret-path") || !strings.Contains(string(b), api.CodeInternal) {
		t.Fatalf("%d %s", st, b)
	}
	if !strings.Contains(e.logs.String(), "secret-path") {
		t.Error("the internal error was not logged")
	}
}

func TestPanicIsA500(t *testing.T) {
	e := newEnv(t, func(s api.Store) api.Store { return panickyStore{s} })
	st, _, b := e.do("GET", "/v1/runs/run_x", aliceToken, "", nil)
	if st != 500 || !strings.Contains(string(b), api.CodeInternal) || strings.Contains(string(b), "kaboom") {
		t.Fatalf("%d %s", st, b)
	}
}

type panickyStore struct{ api.Store }

func (panickyStore) GetRun(context.Context, string) (run.Run, error) { panic("kaboom") }

func TestContextPrincipal(t *testing.T) {
	r := httptest.NewRequest("GET", "/v1/runs", nil)
	if _, err := (api.ContextPrincipal{}).Principal(r); !errors.Is(err, api.ErrUnauthenticated) {
		t.Errorf("no principal: %v", err)
	}
	r = r.WithContext(api.WithPrincipal(r.Context(), "arn:aws:iam::1:user/a"))
	if p, err := (api.ContextPrincipal{}).Principal(r); err != nil || p != "arn:aws:iam::1:user/a" {
		t.Errorf("principal %q %v", p, err)
	}
	if _, err := (api.Tokens{"t": "p"}).Principal(httptest.NewRequest("GET", "/", nil)); !errors.Is(err, api.ErrUnauthenticated) {
		t.Error("Tokens accepted a request without Authorization")
	}
}

// TestAgentDefaults: a run takes its agent's limits, timeout and input
// policy where the request names none, the request's own where it does,
// and Keel's defaults for what is still unset.
func TestAgentDefaults(t *testing.T) {
	e := newEnv(t, nil)
	var got api.Run
	e.doJSON("POST", "/v1/runs", aliceToken, `{"agent":"bounded","input":"x"}`, nil, 201, &got)
	d := run.DefaultLimits()
	if got.Limits.MaxSteps != 7 || got.Limits.MaxSpendMicroUSD != 1_000 || got.Limits.MaxToolCalls != d.MaxToolCalls ||
		got.InputPolicy != run.InputReject || got.Limits.Deadline.Before(time.Now().Add(59*time.Minute)) {
		t.Fatalf("agent defaults not applied: %+v policy %s", got.Limits, got.InputPolicy)
	}
	far := time.Now().AddDate(5, 0, 0).UTC().Truncate(time.Second)
	e.doJSON("POST", "/v1/runs", aliceToken, `{"agent":"bounded","input":"x","input_policy":"queue","limits":{"max_steps":3,"deadline":"`+far.Format(time.RFC3339)+`"}}`,
		nil, 201, &got)
	if got.Limits.MaxSteps != 3 || got.Limits.MaxSpendMicroUSD != 1_000 || got.InputPolicy != run.InputQueue || !got.Limits.Deadline.Equal(far) {
		t.Fatalf("the request's own values must win: %+v policy %s", got.Limits, got.InputPolicy)
	}
	got = api.Run{}
	e.doJSON("POST", "/v1/runs", aliceToken, `{"agent":"echo","input":"x"}`, nil, 201, &got)
	if got.Limits.MaxSteps != d.MaxSteps || got.InputPolicy != run.InputQueue || !got.Limits.Deadline.IsZero() {
		t.Fatalf("an agent without defaults gets Keel's: %+v policy %s", got.Limits, got.InputPolicy)
	}
}
