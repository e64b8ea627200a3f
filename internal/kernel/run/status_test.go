package run

import (
	"errors"
	"testing"
)

// allowed is the life cycle's direct moves written out by hand,
// independently of the transitions table, so an accidental edit of either is
// caught.
var allowed = map[[2]Status]bool{
	{StatusCreated, StatusPlanned}:   true,
	{StatusCreated, StatusRunning}:   true,
	{StatusCreated, StatusFailed}:    true,
	{StatusCreated, StatusCancelled}: true,

	{StatusPlanned, StatusRunning}:          true,
	{StatusPlanned, StatusAwaitingApproval}: true,
	{StatusPlanned, StatusFailed}:           true,
	{StatusPlanned, StatusCancelled}:        true,

	{StatusRunning, StatusPlanned}:          true,
	{StatusRunning, StatusAwaitingApproval}: true,
	{StatusRunning, StatusCompleted}:        true,
	{StatusRunning, StatusFailed}:           true,
	{StatusRunning, StatusCancelled}:        true,
	{StatusRunning, StatusNeedsHuman}:       true,

	{StatusAwaitingApproval, StatusRunning}:    true,
	{StatusAwaitingApproval, StatusFailed}:     true,
	{StatusAwaitingApproval, StatusCancelled}:  true,
	{StatusAwaitingApproval, StatusNeedsHuman}: true,

	{StatusNeedsHuman, StatusRunning}:   true,
	{StatusNeedsHuman, StatusFailed}:    true,
	{StatusNeedsHuman, StatusCancelled}: true,
}

// wantAllowed is the rule CanTransition documents: staying, a direct move,
// or two moves through running in one commit (created → running →
// awaiting_approval is one step's write).
func wantAllowed(from, to Status) bool {
	if from == to || allowed[[2]Status{from, to}] {
		return true
	}
	return from != StatusRunning && allowed[[2]Status{from, StatusRunning}] && allowed[[2]Status{StatusRunning, to}]
}

func TestTransitionEveryPair(t *testing.T) {
	for _, from := range Statuses() {
		for _, to := range Statuses() {
			want := wantAllowed(from, to)
			t.Run(string(from)+"→"+string(to), func(t *testing.T) {
				if got := from.CanTransition(to); got != want {
					t.Fatalf("CanTransition = %t, want %t", got, want)
				}
				err := Transition(from, to)
				if want && err != nil {
					t.Fatalf("Transition: %v", err)
				}
				if !want && !errors.Is(err, ErrIllegalTransition) {
					t.Fatalf("Transition error = %v, want ErrIllegalTransition", err)
				}
			})
		}
	}
}

// TestTransitionNamedCases pins the cases that matter most to the harness,
// so a change of the pass-through rule shows up by name.
func TestTransitionNamedCases(t *testing.T) {
	cases := []struct {
		name     string
		from, to Status
		ok       bool
	}{
		{"StepStartsAndAsksApproval", StatusCreated, StatusAwaitingApproval, true},
		{"StepStartsAndFinishes", StatusCreated, StatusCompleted, true},
		{"ApprovalResumesToDone", StatusAwaitingApproval, StatusCompleted, true},
		{"HumanResolvesToDone", StatusNeedsHuman, StatusCompleted, true},
		{"NothingBackToCreated", StatusRunning, StatusCreated, false},
		{"PlannedNotBackToCreated", StatusPlanned, StatusCreated, false},
		{"CompletedIsFinal", StatusCompleted, StatusRunning, false},
		{"FailedIsFinal", StatusFailed, StatusRunning, false},
		{"CancelledIsFinal", StatusCancelled, StatusCompleted, false},
		{"CancelledNotToNeedsHuman", StatusCancelled, StatusNeedsHuman, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Transition(tc.from, tc.to)
			if tc.ok && err != nil {
				t.Fatalf("Transition(%s, %s): %v", tc.from, tc.to, err)
			}
			if !tc.ok && !errors.Is(err, ErrIllegalTransition) {
				t.Fatalf("Transition(%s, %s) = %v, want ErrIllegalTransition", tc.from, tc.to, err)
			}
		})
	}
}

func TestTransitionUnknownStatus(t *testing.T) {
	cases := []struct {
		name     string
		from, to Status
	}{
		{"UnknownFrom", "sleeping", StatusRunning},
		{"UnknownTo", StatusRunning, "sleeping"},
		{"BothUnknownSame", "sleeping", "sleeping"},
		{"Empty", "", StatusCreated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := Transition(tc.from, tc.to); !errors.Is(err, ErrIllegalTransition) {
				t.Fatalf("Transition(%q, %q) = %v, want ErrIllegalTransition", tc.from, tc.to, err)
			}
		})
	}
}

func TestStatusTerminalAndValid(t *testing.T) {
	cases := []struct {
		s               Status
		valid, terminal bool
	}{
		{StatusCreated, true, false},
		{StatusPlanned, true, false},
		{StatusRunning, true, false},
		{StatusAwaitingApproval, true, false},
		{StatusCompleted, true, true},
		{StatusFailed, true, true},
		{StatusCancelled, true, true},
		// A person may resolve needs_human, so it is not terminal.
		{StatusNeedsHuman, true, false},
		{"", false, false},
		{"done", false, false},
	}
	for _, tc := range cases {
		t.Run(string(tc.s), func(t *testing.T) {
			if got := tc.s.Valid(); got != tc.valid {
				t.Fatalf("Valid = %t, want %t", got, tc.valid)
			}
			if got := tc.s.Terminal(); got != tc.terminal {
				t.Fatalf("Terminal = %t, want %t", got, tc.terminal)
			}
		})
	}
	if n := len(Statuses()); n != 8 {
		t.Fatalf("Statuses lists %d, want 8", n)
	}
}

func TestEnumsValid(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"policy reject", InputReject.Valid()},
		{"policy queue", InputQueue.Valid()},
		{"policy interrupt", InputInterrupt.Valid()},
		{"policy rollback", InputRollback.Valid()},
		{"mode safe_readonly", ModeSafeReadonly.Valid()},
		{"mode confirm_once", ModeConfirmOnce.Valid()},
		{"mode mutating", ModeMutating.Valid()},
		{"op pending", OpPending.Valid()},
		{"op succeeded", OpSucceeded.Valid()},
		{"op failed", OpFailed.Valid()},
		{"op needs_human", OpNeedsHuman.Valid()},
		{"policy unknown", !InputPolicy("drop").Valid()},
		{"policy empty", !InputPolicy("").Valid()},
		{"mode unknown", !Mode("admin").Valid()},
		{"op unknown", !OpStatus("done").Valid()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				t.Fatal("wrong validity")
			}
		})
	}
}

func TestLimitsWithDefaults(t *testing.T) {
	d := DefaultLimits()
	cases := []struct {
		name string
		in   Limits
		want Limits
	}{
		{"Zero", Limits{}, d},
		{"KeepsSet", Limits{MaxSteps: 3, MaxTokens: 7}, Limits{MaxSteps: 3, MaxToolCalls: d.MaxToolCalls, MaxTokens: 7, MaxSpendMicroUSD: d.MaxSpendMicroUSD}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.WithDefaults(); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
