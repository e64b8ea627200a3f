package roles

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/harness"
)

// steps replays decisions; it stands for the harness, whose own tests
// cover what a Step does.
type steps struct {
	mu        sync.Mutex
	decisions []harness.Decision
	err       error
	calls     int
	onCall    func(n int)
}

func (s *steps) Step(ctx context.Context, runID string, budget time.Duration) (harness.Decision, error) {
	s.mu.Lock()
	s.calls++
	n := s.calls
	s.mu.Unlock()
	if s.onCall != nil {
		s.onCall(n)
	}
	if s.err != nil {
		return harness.Decision{}, s.err
	}
	time.Sleep(5 * time.Millisecond)
	return s.decisions[min(n-1, len(s.decisions)-1)], nil
}

// tokens records what the task reported through its task token.
type tokens struct {
	mu         sync.Mutex
	success    []string
	failure    []string
	heartbeats int
}

func (t *tokens) SendTaskSuccess(_ context.Context, token, output string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.success = append(t.success, output)
	return nil
}
func (t *tokens) SendTaskFailure(_ context.Context, token, name, cause string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failure = append(t.failure, name)
	return nil
}
func (t *tokens) SendTaskHeartbeat(context.Context, string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.heartbeats++
	return nil
}

func TestRun(t *testing.T) {
	cont := harness.Decision{Next: harness.NextContinue}
	cases := []struct {
		name        string
		st          *steps
		stopAt      int
		wantNext    harness.Next
		wantFailure string
		wantCalls   int
	}{
		{"steps until a decision", &steps{decisions: []harness.Decision{cont, cont, {Next: harness.NextApproval, ApprovalID: "a1"}}}, 0, harness.NextApproval, "", 3},
		{"stop request hands back continue", &steps{decisions: []harness.Decision{cont}}, 2, harness.NextContinue, "", 2},
		{"fenced is reported by type name", &steps{err: &harness.FencedError{RunID: "r"}}, 0, "", "FencedError", 1},
		{"plain error", &steps{err: errors.New("boom")}, 0, "", "errorString", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tk := &tokens{}
			stop := make(chan struct{})
			if tc.stopAt > 0 {
				tc.st.onCall = func(n int) {
					if n == tc.stopAt {
						close(stop)
					}
				}
			}
			err := RunTask(context.Background(), TaskConfig{Harness: tc.st, Tokens: tk, RunID: "r", TaskToken: "tok", Heartbeat: time.Millisecond}, stop)
			if err != nil {
				t.Fatal(err)
			}
			if tc.st.calls != tc.wantCalls {
				t.Fatalf("steps = %d, want %d", tc.st.calls, tc.wantCalls)
			}
			if tc.wantFailure != "" {
				if len(tk.failure) != 1 || tk.failure[0] != tc.wantFailure || len(tk.success) != 0 {
					t.Fatalf("failure %v success %v", tk.failure, tk.success)
				}
				return
			}
			if len(tk.success) != 1 || len(tk.failure) != 0 {
				t.Fatalf("success %v failure %v", tk.success, tk.failure)
			}
			var d harness.Decision
			if err := json.Unmarshal([]byte(tk.success[0]), &d); err != nil || d.Next != tc.wantNext {
				t.Fatalf("decision %s (%v), want %s", tk.success[0], err, tc.wantNext)
			}
		})
	}
	if err := RunTask(context.Background(), TaskConfig{}, nil); err == nil {
		t.Fatal("ran without a run id and token")
	}
}
