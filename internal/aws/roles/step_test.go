package roles

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
)

type countingStepper struct{ steps int }

func (s *countingStepper) Step(context.Context, string, time.Duration) (harness.Decision, error) {
	s.steps++
	return harness.Decision{Next: harness.NextWait, WaitSeconds: 5}, nil
}

func (s *countingStepper) Finalize(context.Context, string, string) (run.Run, error) {
	return run.Run{}, nil
}

type placeAt struct {
	home   string
	pinned bool
	err    error
}

func (p placeAt) Home(context.Context, string) (string, bool, error) { return p.home, p.pinned, p.err }

// TestStepPlacement: where a Step runs and which code the next one
// invokes, for a step function deployed in versions and one that is not.
func TestStepPlacement(t *testing.T) {
	cases := []struct {
		name      string
		self      string
		code      string // the code the Step was invoked as; "": live
		place     Placement
		wantSteps int
		wantNext  harness.Next
		wantCode  string
		wantErr   bool
	}{
		{name: "keel dev: the code is echoed", place: placeAt{home: "step:1", pinned: true}, wantSteps: 1, wantNext: harness.NextWait, wantCode: "live"},
		{name: "upgrade policy: stays on the live alias", self: "step:2", place: placeAt{}, wantSteps: 1, wantNext: harness.NextWait, wantCode: "live"},
		{name: "pinned here: keeps this version", self: "step:2", place: placeAt{pinned: true}, wantSteps: 1, wantNext: harness.NextWait, wantCode: "step:2"},
		{name: "pinned elsewhere: sent there untouched", self: "step:2", place: placeAt{home: "step:1", pinned: true}, wantNext: harness.NextContinue, wantCode: "step:1"},
		{name: "home is this version", self: "step:1", place: placeAt{home: "step:1", pinned: true}, wantSteps: 1, wantNext: harness.NextWait, wantCode: "step:1"},
		{name: "placement unreadable: retried", self: "step:2", place: placeAt{err: errors.New("s3 down")}, wantErr: true},
		{name: "invoked as this version: home, nothing read", self: "step:1", code: "step:1", place: placeAt{err: errors.New("not asked")}, wantSteps: 1, wantNext: harness.NextWait, wantCode: "step:1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := &countingStepper{}
			s := Step{Harness: h, Self: tc.self, Place: tc.place}
			code := tc.code
			if code == "" {
				code = "live"
			}
			out, err := s.Handle(context.Background(), StepInput{RunID: "run_1", Code: code})
			var retry *harness.RetryableError
			if tc.wantErr {
				if !errors.As(err, &retry) || h.steps != 0 {
					t.Fatalf("err %v after %d steps: want a RetryableError before any step", err, h.steps)
				}
				return
			}
			if err != nil || h.steps != tc.wantSteps || out.Next != tc.wantNext || out.Code != tc.wantCode {
				t.Fatalf("got %+v, %v after %d steps; want next %s code %s after %d", out, err, h.steps, tc.wantNext, tc.wantCode, tc.wantSteps)
			}
		})
	}
}
