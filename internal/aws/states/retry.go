package states

import (
	"math"
	"time"
)

// Error names defined by the States Language that Keel's subset raises or
// matches.
const (
	ErrALL                   = "States.ALL"
	ErrTaskFailed            = "States.TaskFailed"
	ErrTimeout               = "States.Timeout"
	ErrHeartbeatTimeout      = "States.HeartbeatTimeout"
	ErrRuntime               = "States.Runtime"
	ErrParameterPathFailure  = "States.ParameterPathFailure"
	ErrResultPathMatchFail   = "States.ResultPathMatchFailure"
	ErrIntrinsicFailure      = "States.IntrinsicFailure"
	ErrDataLimitExceeded     = "States.DataLimitExceeded"
	ErrLambdaNotFound        = "Lambda.ResourceNotFoundException"
	ErrExecutionAlreadyExist = "StepFunctions.ExecutionAlreadyExistsException"
)

// Retrier is one element of a Task state's Retry array.
type Retrier struct {
	ErrorEquals     []string
	IntervalSeconds int
	MaxAttempts     int
	BackoffRate     float64
	MaxDelaySeconds int
	JitterStrategy  string // "FULL" or "NONE"
}

// Catcher is one element of a Task state's Catch array.
type Catcher struct {
	ErrorEquals []string
	Next        string
	ResultPath  optPath
}

// errorMatches reports whether an ErrorEquals list matches the error name.
//
// States.ALL matches everything except States.Runtime and
// States.DataLimitExceeded, which are terminal. States.TaskFailed matches
// everything States.ALL does except the timeouts. States.Timeout also
// matches States.HeartbeatTimeout, since a heartbeat timeout is a timeout.
func errorMatches(list []string, name string) bool {
	for _, e := range list {
		switch {
		case e == name:
			return true
		case e == ErrALL:
			return name != ErrRuntime && name != ErrDataLimitExceeded
		case e == ErrTaskFailed:
			if name != ErrRuntime && name != ErrDataLimitExceeded && name != ErrTimeout && name != ErrHeartbeatTimeout {
				return true
			}
		case e == ErrTimeout && name == ErrHeartbeatTimeout:
			return true
		}
	}
	return false
}

// retryDecision picks the retrier for an error. It returns the retrier's
// index and whether a retry is due; attempts[i] counts the retries retrier
// i has already made during this visit of the state. The first retrier
// whose ErrorEquals matches decides, even when its attempts are spent.
func retryDecision(rs []Retrier, attempts []int, name string) (int, bool) {
	if name == ErrRuntime || name == ErrDataLimitExceeded {
		return -1, false
	}
	for i, r := range rs {
		if errorMatches(r.ErrorEquals, name) {
			return i, attempts[i] < r.MaxAttempts
		}
	}
	return -1, false
}

// retryDelay is the wait before retry number attempt+1 of r (attempt counts
// retries already made): IntervalSeconds × BackoffRate^attempt, capped by
// MaxDelaySeconds, then scaled by rnd ∈ [0,1) under the FULL jitter
// strategy.
func retryDelay(r Retrier, attempt int, rnd float64) time.Duration {
	secs := float64(r.IntervalSeconds) * math.Pow(r.BackoffRate, float64(attempt))
	if r.MaxDelaySeconds > 0 && secs > float64(r.MaxDelaySeconds) {
		secs = float64(r.MaxDelaySeconds)
	}
	if r.JitterStrategy == "FULL" {
		secs *= rnd
	}
	return time.Duration(secs * float64(time.Second))
}

func catchFor(cs []Catcher, name string) (Catcher, bool) {
	if name == ErrRuntime || name == ErrDataLimitExceeded {
		return Catcher{}, false
	}
	for _, c := range cs {
		if errorMatches(c.ErrorEquals, name) {
			return c, true
		}
	}
	return Catcher{}, false
}
