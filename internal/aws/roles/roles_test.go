package roles_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/aws/roles"
	artfs "github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/observe/telemetry"
)

type sent struct {
	mu      sync.Mutex
	success map[string]string
}

func (s *sent) SendTaskSuccess(_ context.Context, token, output string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.success[token] = output
	return nil
}
func (s *sent) SendTaskFailure(context.Context, string, string, string) error { return nil }

type starts struct{ names []string }

func (s *starts) StartRun(_ context.Context, id string) error {
	s.names = append(s.names, id)
	return nil
}

func openStore(t *testing.T) *sqlite.Store {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "k.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// pendingApproval makes a run wait on an approval, as a Step would.
func pendingApproval(t *testing.T, st *sqlite.Store) (run.Run, run.Approval) {
	ctx := context.Background()
	r, _, err := st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "s", Owner: "o", Agent: "a", Request: "x", InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	r, err = st.AcquireLease(ctx, r.ID, "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"a":1}`)
	h, _ := run.ArgsHash(args)
	ap := run.Approval{ID: "apr_1", RunID: r.ID, SessionID: "s", PlanItemID: "item_1", Tool: "t", Mode: run.ModeMutating, Args: args, ArgsHash: h, Status: run.ApprovalPending}
	_, err = st.Commit(ctx, store.Commit{RunID: r.ID, Token: r.Lease.Token, Run: &store.RunPatch{Status: run.StatusAwaitingApproval, ReleaseLease: true},
		PlanItems:    []run.PlanItem{{ID: "item_1", RunID: r.ID, Order: 1, Tool: "t", Args: args, ArgsHash: h, Mode: run.ModeMutating, Status: run.PlanAwaitingApproval, CallID: "c1"}},
		NewApprovals: []run.Approval{ap}})
	if err != nil {
		t.Fatal(err)
	}
	return r, ap
}

func TestApprovalHandler(t *testing.T) {
	ctx := context.Background()
	t.Run("token first, decision later", func(t *testing.T) {
		st := openStore(t)
		tk := &sent{success: map[string]string{}}
		r, ap := pendingApproval(t, st)
		h := roles.Approval{Store: st, Tokens: tk}
		if _, err := h.Handle(ctx, roles.ApprovalInput{RunID: r.ID, ApprovalID: ap.ID, TaskToken: "tok-1"}); err != nil {
			t.Fatal(err)
		}
		if len(tk.success) != 0 {
			t.Fatal("resumed before a decision")
		}
		decided, err := st.DecideApproval(ctx, store.Decision{RunID: r.ID, ApprovalID: ap.ID, Approve: true, ArgsHash: ap.ArgsHash, DecidedBy: "bob"})
		if err != nil {
			t.Fatal(err)
		}
		if err := (roles.Resumer{Tokens: tk}).Resume(ctx, decided); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(tk.success["tok-1"], "approved") {
			t.Fatalf("sent %v", tk.success)
		}
	})
	t.Run("decision first, token later", func(t *testing.T) {
		st := openStore(t)
		tk := &sent{success: map[string]string{}}
		r, ap := pendingApproval(t, st)
		if _, err := st.DecideApproval(ctx, store.Decision{RunID: r.ID, ApprovalID: ap.ID, Approve: false, ArgsHash: ap.ArgsHash, DecidedBy: "bob"}); err != nil {
			t.Fatal(err)
		}
		if _, err := (roles.Approval{Store: st, Tokens: tk}).Handle(ctx, roles.ApprovalInput{RunID: r.ID, ApprovalID: ap.ID, TaskToken: "tok-2"}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(tk.success["tok-2"], "denied") {
			t.Fatalf("the decision that raced ahead was not sent: %v", tk.success)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		st := openStore(t)
		if _, err := (roles.Approval{Store: st}).Handle(ctx, roles.ApprovalInput{RunID: "r"}); err == nil {
			t.Fatal("accepted an empty token")
		}
	})
}

func TestScheduleIsIdempotentPerScheduledTime(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	s := &starts{}
	h := roles.Schedule{Store: st, Starter: s}
	ev := roles.ScheduleEvent{ScheduleName: "nightly", ScheduledTime: "2026-11-30T02:00:00Z", Owner: "ops", Agent: "research", Input: "daily report"}
	a, err := h.Handle(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.Handle(ctx, ev) // redelivered
	if err != nil {
		t.Fatal(err)
	}
	if a["run_id"] != b["run_id"] {
		t.Fatalf("redelivery made another run: %s vs %s", a["run_id"], b["run_id"])
	}
	ev.ScheduledTime = "2026-12-01T02:00:00Z"
	c, err := h.Handle(ctx, ev)
	if err != nil || c["run_id"] == a["run_id"] {
		t.Fatalf("next day: %v %v", c, err)
	}
	for _, bad := range []roles.ScheduleEvent{{}, {ScheduleName: "x", ScheduledTime: "yesterday", Owner: "o", Agent: "a", Input: "i"}} {
		if _, err := h.Handle(ctx, bad); err == nil {
			t.Fatalf("accepted %+v", bad)
		}
	}
}

// TestScheduleUsesAgentDefaults: a scheduled run gets its agent's limits
// and input policy; an event naming an agent the program lacks is refused.
func TestScheduleUsesAgentDefaults(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	h := roles.Schedule{Store: st, Starter: &starts{}, Agents: api.AgentSet{
		"research": {Limits: run.Limits{MaxSteps: 9}, InputPolicy: run.InputReject}}}
	out, err := h.Handle(ctx, roles.ScheduleEvent{ScheduleName: "n", ScheduledTime: "2026-11-30T02:00:00Z", Owner: "ops", Agent: "research", Input: "x"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.GetRun(ctx, out["run_id"])
	if err != nil || r.Limits.MaxSteps != 9 || r.InputPolicy != run.InputReject || r.Limits.MaxToolCalls != run.DefaultLimits().MaxToolCalls {
		t.Fatalf("run %+v, %v", r, err)
	}
	if _, err := h.Handle(ctx, roles.ScheduleEvent{ScheduleName: "n", ScheduledTime: "2026-11-30T02:00:00Z", Owner: "ops", Agent: "ghost", Input: "x"}); err == nil {
		t.Fatal("an unknown agent was scheduled")
	}
}

func TestFinalizeRecordsFailure(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	hs, err := harness.New(harness.Options{Store: st, Agents: harness.AgentMap{}, Owner: "fin"})
	if err != nil {
		t.Fatal(err)
	}
	r, _, _ := st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "s", Owner: "o", Agent: "a", Request: "x", InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()})
	arts, err := artfs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fin := roles.Finalize{Harness: hs, Records: st, Artifacts: arts}
	out, err := fin.Handle(ctx, roles.FinalizeInput{RunID: r.ID, Error: &roles.StatesError{Error: "States.Timeout", Cause: "approval timed out"}})
	if err != nil {
		t.Fatal(err)
	}
	k, err := artifact.ParsePath(out.DebugBundle)
	if err != nil {
		t.Fatalf("bundle path %q: %v", out.DebugBundle, err)
	}
	data, _, err := arts.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	files, err := telemetry.ReadArchive(data)
	if err != nil {
		t.Fatal(err)
	}
	var last telemetry.LastState
	if err := json.Unmarshal(files["last_state.json"], &last); err != nil || last.Run.Status != run.StatusFailed ||
		strings.Count(string(files["events.jsonl"]), "\n") < 2 {
		t.Fatalf("bundle: %v, %s", err, files["last_state.json"])
	}
	got, _ := st.GetRun(ctx, r.ID)
	if !out.Failed || got.Status != run.StatusFailed || !strings.Contains(got.Error, "States.Timeout") {
		t.Fatalf("%+v, run %s %q", out, got.Status, got.Error)
	}
	// Finalizing again changes nothing.
	again, err := fin.Handle(ctx, roles.FinalizeInput{RunID: r.ID, Error: &roles.StatesError{Error: "Other"}})
	if err != nil || !again.Failed {
		t.Fatal(again, err)
	}
	if got2, _ := st.GetRun(ctx, r.ID); got2.Error != got.Error {
		t.Fatal("second finalize rewrote the error")
	}
	// The chain head, anchored outside the store as an artifact.
	hd, _, err := arts.Get(ctx, artifact.Key{RunID: r.ID, CheckpointID: "final", Name: roles.AuditHeadName})
	if err != nil {
		t.Fatal(err)
	}
	var head roles.AuditHead
	if err := json.Unmarshal(hd, &head); err != nil || head.Hash != got.LastHash || head.Seq != got.LastSeq || head.Hash == "" {
		t.Fatalf("audit head %s (%v), run head %d %s", hd, err, got.LastSeq, got.LastHash)
	}
}

// TestStepInputMatchesDefinition: every key the definition's Step state
// sends decodes into StepInput (execution_id was tagged "execution").
func TestStepInputMatchesDefinition(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "stepfunctions", "run.asl.json"))
	if err != nil {
		t.Fatal(err)
	}
	var def struct {
		States map[string]struct {
			Parameters struct{ Payload map[string]any }
		}
	}
	if err := json.Unmarshal(b, &def); err != nil {
		t.Fatal(err)
	}
	payload := map[string]string{}
	for k := range def.States["Step"].Parameters.Payload {
		payload[strings.TrimSuffix(k, ".$")] = "x"
	}
	raw, _ := json.Marshal(payload)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var in roles.StepInput
	if err := dec.Decode(&in); err != nil {
		t.Fatalf("the Step payload %s does not decode into StepInput: %v", raw, err)
	}
	if in.RunID != "x" || in.ExecutionID != "x" {
		t.Fatalf("decoded %+v from %s", in, raw)
	}
}
