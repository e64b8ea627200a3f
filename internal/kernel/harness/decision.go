package harness

import (
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/store"
)

// Next is what the state machine does after a Step.
type Next string

// Next values, matched by stepfunctions/run.asl.json.
const (
	NextContinue   Next = "continue"
	NextApproval   Next = "approval"
	NextWait       Next = "wait"
	NextSpill      Next = "spill"
	NextDone       Next = "done"
	NextFailed     Next = "failed"
	NextCancelled  Next = "cancelled"
	NextNeedsHuman Next = "needs_human"
)

// Decision is a Step's answer. Every field is always present in JSON so the
// state machine's paths exist on every branch; it stays far under 1 KB.
type Decision struct {
	Next                   Next   `json:"next"`
	ApprovalID             string `json:"approval_id"`
	WaitSeconds            int64  `json:"wait_seconds"`
	ApprovalTimeoutSeconds int64  `json:"approval_timeout_seconds"`
	// Error is why the run failed or needs a person; on a wait, what it
	// waits for.
	Error string `json:"error"`
	// Children, on a wait for child runs, are those of the run's children
	// that no execution drives yet, when this worker cannot start one
	// (the step role on AWS): the state machine starts them (StartChild)
	// before it waits. Empty otherwise; the sweeper starts whatever it
	// misses. The step role writes [] for none (a path the state
	// machine reads must exist).
	Children []string `json:"children"`
	// Busy: the Step found another worker's lease and did nothing; Next
	// is wait, for about as long as that lease has left. Omitted when
	// false: the state machine never reads it.
	Busy bool `json:"busy,omitempty"`
}

// FencedError: another worker holds the run; this one stopped without
// writing. Step Functions matches the name "FencedError".
type FencedError struct{ RunID string }

func (e *FencedError) Error() string { return fmt.Sprintf("run %s: fenced by a newer worker", e.RunID) }

// RetryableError is a transient failure (store or destination unavailable);
// Step Functions retries the step by the name "RetryableError".
type RetryableError struct{ Err error }

func (e *RetryableError) Error() string { return "retryable: " + e.Err.Error() }
func (e *RetryableError) Unwrap() error { return e.Err }

// ErrUnknownAgent: the run names an agent this worker does not have.
var ErrUnknownAgent = errors.New("unknown agent")

// mapStoreErr is a store error as the state machine routes it: fenced, or
// retryable.
func mapStoreErr(runID string, err error) error {
	if errors.Is(err, store.ErrFenced) {
		return &FencedError{RunID: runID}
	}
	return &RetryableError{Err: err}
}
