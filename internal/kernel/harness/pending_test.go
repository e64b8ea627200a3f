package harness

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// commitLog is a Store that keeps the commits it is given; any other call
// panics (the embedded nil Store): the pending commit needs no more.
type commitLog struct {
	Store
	commits []store.Commit
	err     error
	reads   int
}

func (c *commitLog) Commit(_ context.Context, cm store.Commit) ([]int64, error) {
	if c.err != nil {
		return nil, c.err
	}
	c.commits = append(c.commits, cm)
	seqs := make([]int64, len(cm.Events))
	for i := range seqs {
		seqs[i] = int64(100 + i)
	}
	return seqs, nil
}

func (c *commitLog) RunSignals(context.Context, string) (store.RunSignals, error) {
	c.reads++
	return store.RunSignals{LeaseToken: 7}, nil
}

// signalLog also returns the run's signals with each commit.
type signalLog struct{ commitLog }

func (c *signalLog) CommitSignals(ctx context.Context, cm store.Commit) ([]int64, store.RunSignals, error) {
	seqs, err := c.Commit(ctx, cm)
	return seqs, store.RunSignals{LeaseToken: 7, CancelRequested: true}, err
}

// testStep is a step of run_1 under lease token 7 whose store is st.
func testStep(st Store) *step {
	opt := &Options{Store: st, Clock: func() time.Time { return time.Unix(1000, 0) }, Faults: noFaults{}}
	s := &step{env: env{opt: opt, agent: Agent{Version: "v1"}, run: run.Run{ID: "run_1"}, red: redactor{"s3cret-value"}}}
	s.tr.red = s.red
	s.tr.add(model.Message{Role: model.RoleUser, Text: "task"})
	s.cur = cursor{checkpoint: "cp_0", seq: 3, msgs: 1, head: 9, steps: 2}
	s.pl = newPlan(nil, nil)
	s.pend = pending{e: &s.env, tr: &s.tr, pl: &s.pl, cur: &s.cur, ws: &s.ws, token: 7, status: run.StatusRunning}
	return s
}

func TestPendingFlush(t *testing.T) {
	cases := []struct {
		name    string
		fill    func(s *step)
		extra   store.Commit
		err     error
		wantErr bool
		check   func(t *testing.T, s *step, cs []store.Commit)
	}{
		{"nothing pending writes nothing", func(*step) {}, store.Commit{}, nil, false, func(t *testing.T, s *step, cs []store.Commit) {
			if len(cs) != 0 {
				t.Fatalf("%d commits", len(cs))
			}
		}},
		{"an iteration is one commit with its checkpoint before the closing events", func(s *step) {
			s.tr.add(model.Message{Role: model.RoleAssistant, Text: "done"})
			s.pend.step()
			s.pend.use(store.Amounts{Tokens: 5})
			s.pend.event(run.Event{Type: run.EventTurnCompleted})
			s.pend.setStatus(run.StatusCompleted)
			s.pend.item(run.PlanItem{ID: "item_1", CallID: "c1", Status: run.PlanCompleted})
		}, store.Commit{}, nil, false, func(t *testing.T, s *step, cs []store.Commit) {
			if len(cs) != 1 {
				t.Fatalf("%d commits, want 1", len(cs))
			}
			c := cs[0]
			if c.RunID != "run_1" || c.Token != 7 || c.Checkpoint == nil || c.Checkpoint.Seq != 4 || c.Checkpoint.Parent != "cp_0" || c.Checkpoint.Step != 3 {
				t.Fatalf("commit %+v, checkpoint %+v", c, c.Checkpoint)
			}
			var st checkpointState
			if err := json.Unmarshal(c.Checkpoint.State, &st); err != nil || len(st.Messages) != 1 || st.AgentVersion != "v1" {
				t.Fatalf("checkpoint state %s (%v)", c.Checkpoint.State, err)
			}
			if len(c.Events) != 2 || c.Events[0].Type != run.EventCheckpointWritten || c.Events[1].Type != run.EventTurnCompleted {
				t.Fatalf("events %+v", c.Events)
			}
			if c.Run == nil || c.Run.Status != run.StatusCompleted || c.Run.StepsDelta != 1 || c.Run.CheckpointID != c.Checkpoint.ID || c.Used.Tokens != 5 {
				t.Fatalf("run patch %+v, used %+v", c.Run, c.Used)
			}
			if len(c.PlanItems) != 1 || c.PlanItems[0].UpdatedAt.IsZero() {
				t.Fatalf("items %+v", c.PlanItems)
			}
			if s.cur.checkpoint != c.Checkpoint.ID || s.cur.msgs != 2 || !s.cur.said || s.cur.head != 101 || s.cur.steps != 3 || s.cur.budget.TokensUsed != 5 {
				t.Fatalf("cursor %+v", s.cur)
			}
			if !s.pend.empty() || s.pend.token != 7 {
				t.Fatalf("after the commit: records %+v, token %d", s.pend.rec, s.pend.token)
			}
			if _, ok := s.pl.get("c1"); !ok {
				t.Fatal("the recorded item is not the plan's")
			}
		}},
		{"a commit that releases the lease ends the token", func(s *step) {
			s.pend.releaseLease()
		}, store.Commit{}, nil, false, func(t *testing.T, s *step, cs []store.Commit) {
			if len(cs) != 1 || cs[0].Checkpoint != nil || s.pend.token != -1 {
				t.Fatalf("%d commits, token %d", len(cs), s.pend.token)
			}
		}},
		{"extra records go in the same commit, secrets out", func(s *step) {
			s.pend.event(run.Event{Type: run.EventToolFailed, Data: jsonObj("error", "token s3cret-value refused")})
		}, store.Commit{OperationUpdates: []store.OperationUpdate{{ID: "op_1", Error: "s3cret-value"}}}, nil, false, func(t *testing.T, s *step, cs []store.Commit) {
			c := cs[0]
			if strings.Contains(string(c.Events[0].Data), "s3cret") || c.OperationUpdates[0].Error != redacted {
				t.Fatalf("secrets recorded: %s, %q", c.Events[0].Data, c.OperationUpdates[0].Error)
			}
		}},
		{"fenced: nothing moves", func(s *step) {
			s.tr.add(model.Message{Role: model.RoleAssistant, Text: "x"})
			s.pend.event(run.Event{Type: run.EventModelCallCompleted})
		}, store.Commit{}, store.ErrFenced, true, func(t *testing.T, s *step, cs []store.Commit) {
			if s.cur.msgs != 1 || s.cur.checkpoint != "cp_0" || s.pend.empty() || s.pend.token != 7 {
				t.Fatalf("a refused commit moved the step: cursor %+v", s.cur)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &commitLog{err: tc.err}
			s := testStep(st)
			tc.fill(s)
			err := s.pend.flush(context.Background(), tc.extra)
			if tc.wantErr {
				var fe *FencedError
				if !errors.As(err, &fe) {
					t.Fatalf("flush: %v, want a FencedError", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			tc.check(t, s, st.commits)
		})
	}
}

func TestPendingSignals(t *testing.T) {
	cases := []struct {
		name        string
		st          Store
		wantReads   int
		wantCancel  bool
		secondReads int
	}{
		{"a store without signals is read", &commitLog{}, 1, false, 2},
		{"a commit's signals are used once, then read", &signalLog{}, 0, true, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := testStep(tc.st)
			s.pend.event(run.Event{Type: run.EventModelCallCompleted})
			ctx := context.Background()
			if err := s.pend.flush(ctx, store.Commit{}); err != nil {
				t.Fatal(err)
			}
			reads := func() int {
				if sl, ok := tc.st.(*signalLog); ok {
					return sl.reads
				}
				return tc.st.(*commitLog).reads
			}
			sig, err := s.pend.signals(ctx)
			if err != nil || sig.LeaseToken != 7 || sig.CancelRequested != tc.wantCancel || reads() != tc.wantReads {
				t.Fatalf("signals %+v (%v) after %d reads", sig, err, reads())
			}
			if _, err := s.pend.signals(ctx); err != nil || reads() != tc.secondReads {
				t.Fatalf("second signals: %v after %d reads, want %d", err, reads(), tc.secondReads)
			}
		})
	}
}

func TestPendingRecords(t *testing.T) {
	cases := []struct {
		name  string
		fill  func(p *pending)
		empty bool
		room  int
	}{
		{"nothing", func(*pending) {}, true, store.MaxItemsPerCommit - 8},
		{"a status already the run's patches nothing", func(p *pending) { p.setStatus(run.StatusRunning) }, true, store.MaxItemsPerCommit - 8},
		{"an item put twice is written once", func(p *pending) {
			p.item(run.PlanItem{ID: "item_1", CallID: "c1"})
			p.item(run.PlanItem{ID: "item_1", CallID: "c1", Status: run.PlanCompleted})
		}, false, store.MaxItemsPerCommit - 9},
		{"inputs and events take room", func(p *pending) {
			p.consume([]string{"in_1", "in_2"})
			p.event(run.Event{Type: run.EventTurnStarted})
		}, false, store.MaxItemsPerCommit - 11},
		{"a reservation settled is use and release", func(p *pending) {
			a := store.Amounts{ToolCalls: 1, SpendMicroUSD: 3}
			p.release(a)
			p.use(a)
		}, false, store.MaxItemsPerCommit - 8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := testStep(&commitLog{})
			tc.fill(&s.pend)
			if s.pend.empty() != tc.empty || s.pend.room(8) != tc.room {
				t.Fatalf("empty %v, room %d; want %v, %d", s.pend.empty(), s.pend.room(8), tc.empty, tc.room)
			}
			s.pend.drop()
			if !s.pend.empty() {
				t.Fatal("drop left records")
			}
		})
	}
}
