package store

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
)

// Input validation shared by every backend.
//
// Each Store method's backend calls the matching Validate function first,
// before it reads or writes anything, so every backend refuses the same
// input with the same sentinel (ErrInvalid) and the same message naming the
// field. Checks that depend on how a backend stores data (DynamoDB's
// transaction payload limit, a backend's page token format) stay in the
// backend.

const (
	// MaxID bounds every id, owner, key, tool and reference string.
	MaxID = 512
	// MaxTaskToken bounds a Step Functions task token (documented at 1024;
	// room for growth).
	MaxTaskToken = 8 << 10
	// maxEventType bounds an event type's name.
	maxEventType = 64
	// defaultRunsPerPage is ListRunsQuery's limit when zero.
	defaultRunsPerPage = 100
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("store: %w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// ValidateID checks a required id-like string (an id, owner, key or tool
// name): not empty and at most MaxID bytes. field names it in the error.
func ValidateID(field, v string) error {
	if v == "" {
		return invalid("%s is empty", field)
	}
	return checkOptional(field, v)
}

// checkOptional checks an optional id-like string: at most MaxID bytes.
func checkOptional(field, v string) error {
	if len(v) > MaxID {
		return invalid("%s is %d bytes, over %d", field, len(v), MaxID)
	}
	return nil
}

func checkSize(field string, n, limit int) error {
	if n > limit {
		return invalid("%s is %d bytes, over %d", field, n, limit)
	}
	return nil
}

// checkJSON accepts empty (absent) or one valid JSON document.
func checkJSON(field string, b []byte, limit int) error {
	if err := checkSize(field, len(b), limit); err != nil {
		return err
	}
	if len(b) > 0 && !json.Valid(b) {
		return invalid("%s is not valid JSON", field)
	}
	return nil
}

// field is a named string, for checking several in a row.
type field struct{ name, v string }

func checkIDs(fs ...field) error {
	for _, f := range fs {
		if err := ValidateID(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

func checkOptionals(fs ...field) error {
	for _, f := range fs {
		if err := checkOptional(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// argsHash checks args and returns the hash to store: computed from args when
// present (a given hash must agree), else the given hash.
func argsHash(field string, args []byte, given string) (string, error) {
	if err := checkSize(field, len(args), MaxArgs); err != nil {
		return "", err
	}
	if len(args) == 0 {
		return given, nil
	}
	if given != "" {
		// A hash stored by an older Keel is checked by the rule that made it.
		if err := run.VerifyArgsHash(args, given); err != nil {
			return "", invalid("%s: %v", field, err)
		}
		return given, nil
	}
	h, err := run.ArgsHash(args)
	if err != nil {
		return "", invalid("%s: %v", field, err)
	}
	return h, nil
}

// checkEventType accepts the shape of an event type (lowercase snake case)
// rather than a closed list, so a new type in package run needs no change
// here.
func checkEventType(t run.EventType) error {
	if t == "" {
		return invalid("event type is empty")
	}
	if len(t) > maxEventType {
		return invalid("event type %q is over %d bytes", t, maxEventType)
	}
	for _, c := range []byte(t) {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return invalid("event type %q is not lowercase snake case", t)
		}
	}
	return nil
}

func validPlanStatus(s run.PlanStatus) bool {
	switch s {
	case run.PlanPending, run.PlanAwaitingApproval, run.PlanRunning, run.PlanCompleted,
		run.PlanFailed, run.PlanDenied, run.PlanSkipped, run.PlanNeedsHuman:
		return true
	}
	return false
}

// checkAmounts refuses a negative amount; what names the amounts in the
// error.
func checkAmounts(what string, a Amounts) error {
	if a.Tokens < 0 || a.SpendMicroUSD < 0 || a.ToolCalls < 0 {
		return invalid("%s: negative amount %+v", what, a)
	}
	return nil
}

// ValidateNewRun checks the input of Runs.CreateRun and returns the run to
// store: ids, owner and session present and at most MaxID bytes; optional
// references at most MaxID; request and command at most MaxText; status
// empty or created; a known input policy (empty becomes queue); no
// negative limit. The returned run is in status created at seq 1 with
// everything a new run cannot carry (output, budget use, lease, cancel
// flag, steps, checkpoint) cleared.
func ValidateNewRun(r run.Run) (run.Run, error) {
	if err := checkIDs(field{"run id", r.ID}, field{"session id", r.SessionID}, field{"owner", r.Owner}); err != nil {
		return r, err
	}
	if err := checkOptionals(field{"agent", r.Agent}, field{"client key", r.ClientKey},
		field{"parent run id", r.ParentRunID}, field{"fork checkpoint id", r.ForkCheckpointID},
		field{"caller run id", r.Caller.RunID}, field{"caller plan item id", r.Caller.PlanItemID},
		field{"caller operation id", r.Caller.OperationID}); err != nil {
		return r, err
	}
	if c := r.Caller; c != (run.Caller{}) && (c.RunID == "" || c.OperationID == "" || c.Depth < 1) {
		return r, invalid("a child run's caller names its run, its operation and a depth of at least 1, not %+v", c)
	}
	if err := checkSize("request", len(r.Request), MaxText); err != nil {
		return r, err
	}
	if err := checkSize("command", len(r.Command), MaxText); err != nil {
		return r, err
	}
	if r.Status != "" && r.Status != run.StatusCreated {
		return r, invalid("a new run has status created, not %q", r.Status)
	}
	if err := run.ValidTraceParent(r.TraceParent); err != nil {
		return r, invalid("%v", err)
	}
	if !validAgentVersion(r.AgentVersion) {
		return r, invalid("agent version %q: want up to 64 lowercase hex digits", r.AgentVersion)
	}
	if r.InputPolicy == "" {
		r.InputPolicy = run.InputQueue
	}
	if !r.InputPolicy.Valid() {
		return r, invalid("unknown input policy %q", r.InputPolicy)
	}
	l := r.Limits
	if l.MaxSteps < 0 || l.MaxToolCalls < 0 || l.MaxTokens < 0 || l.MaxSpendMicroUSD < 0 {
		return r, invalid("negative limit %+v", l)
	}
	r.Status = run.StatusCreated
	r.Output, r.Error = "", ""
	r.Budget = run.Budget{}
	r.Lease = run.Lease{}
	r.CancelRequested = false
	r.StepCount = 0
	r.CheckpointID = ""
	r.LastSeq = 1
	return r, nil
}

// ValidateRunsQuery checks the input of Runs.ListRuns (no negative limit, a
// known status if any) and returns the page size to use: 100 for 0, at
// most MaxRunsPerPage. The page token's format is the backend's to check.
func ValidateRunsQuery(q ListRunsQuery) (limit int, err error) {
	switch {
	case q.Limit < 0:
		return 0, invalid("negative limit %d", q.Limit)
	case q.Limit == 0:
		limit = defaultRunsPerPage
	default:
		limit = min(q.Limit, MaxRunsPerPage)
	}
	if q.Status != "" && !q.Status.Valid() {
		return 0, invalid("unknown status %q", q.Status)
	}
	if err := checkOptionals(field{"parent run id", q.Parent}); err != nil {
		return 0, err
	}
	return limit, nil
}

// ValidateLease checks the input of Leases.AcquireLease: run id and owner
// present, a positive ttl.
func ValidateLease(runID, owner string, ttl time.Duration) error {
	if err := checkIDs(field{"run id", runID}, field{"lease owner", owner}); err != nil {
		return err
	}
	if ttl <= 0 {
		return invalid("lease ttl %v is not positive", ttl)
	}
	return nil
}

// ValidatePage checks the input of Events.ReadEvents and
// Checkpoints.ListCheckpoints (run id present, no negative seq or limit)
// and returns the page size to use: MaxEventsPerPage for 0, at most that.
func ValidatePage(runID string, afterSeq int64, limit int) (int, error) {
	if err := ValidateID("run id", runID); err != nil {
		return 0, err
	}
	if limit < 0 || afterSeq < 0 {
		return 0, invalid("negative limit %d or seq %d", limit, afterSeq)
	}
	if limit == 0 || limit > MaxEventsPerPage {
		limit = MaxEventsPerPage
	}
	return limit, nil
}

// ValidateAppend checks the input of Events.AppendEvents: run id present,
// 1 to MaxItemsPerCommit-1 events (the run row is the other item), each
// valid as in a Commit.
func ValidateAppend(runID string, events []run.Event) error {
	if err := ValidateID("run id", runID); err != nil {
		return err
	}
	if len(events) == 0 {
		return invalid("no events to append")
	}
	if len(events) > MaxItemsPerCommit-1 {
		return invalid("%d events, over %d per write", len(events), MaxItemsPerCommit-1)
	}
	return validateEvents(events)
}

// validateEvents checks each event's type (lowercase snake case, at most 64
// bytes), references (at most MaxID) and data (empty or one JSON document
// of at most MaxEventData bytes).
func validateEvents(events []run.Event) error {
	for i, e := range events {
		if err := checkEventType(e.Type); err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
		if err := checkOptionals(field{"event plan item id", e.PlanItemID}, field{"event operation id", e.OperationID}); err != nil {
			return err
		}
		if err := checkJSON("event data", e.Data, MaxEventData); err != nil {
			return fmt.Errorf("event %d (%s): %w", i, e.Type, err)
		}
	}
	return nil
}

// ValidateDecision checks the input of Approvals.DecideApproval: run id,
// approval id, args hash and decider present; reason at most MaxText.
func ValidateDecision(d Decision) error {
	if err := checkIDs(field{"run id", d.RunID}, field{"approval id", d.ApprovalID},
		field{"args hash", d.ArgsHash}, field{"decided by", d.DecidedBy}); err != nil {
		return err
	}
	if d.Link != nil {
		if err := checkIDs(field{"notification id", d.Link.NotificationID}, field{"link hash", d.Link.Hash}); err != nil {
			return err
		}
		if d.Link.At.IsZero() {
			return invalid("link use has no time")
		}
	}
	return checkSize("reason", len(d.Reason), MaxText)
}

// ValidateTaskToken checks the input of Approvals.AttachTaskToken: run and
// approval ids present, a token of 1 to MaxTaskToken bytes.
func ValidateTaskToken(runID, approvalID, token string) error {
	if err := checkIDs(field{"run id", runID}, field{"approval id", approvalID}); err != nil {
		return err
	}
	if token == "" {
		return invalid("task token is empty")
	}
	return checkSize("task token", len(token), MaxTaskToken)
}

// ValidateGrant checks the input of Approvals.HasGrant: session id and tool
// present.
func ValidateGrant(sessionID, tool string) error {
	return checkIDs(field{"session id", sessionID}, field{"tool", tool})
}

// ValidateReserve checks the input of Budgets.Reserve: run id present, no
// negative amount.
func ValidateReserve(runID string, a Amounts) error {
	if err := ValidateID("run id", runID); err != nil {
		return err
	}
	return checkAmounts("reserve", a)
}

// ValidateCancel checks the input of Control.RequestCancel: run id and the
// person cancelling present.
func ValidateCancel(runID, by string) error {
	return checkIDs(field{"run id", runID}, field{"cancelled by", by})
}

// ValidateSettlement checks a Settlement: ids and By present, a known
// outcome, a Reason (what the person found out is the record), sizes in
// bounds.
func ValidateSettlement(s Settlement) error {
	if err := checkIDs(field{"run id", s.RunID}, field{"operation id", s.OperationID}, field{"settled by", s.By}); err != nil {
		return err
	}
	if !s.Outcome.Valid() {
		return invalid("outcome %q: want happened, not_happened or give_up", s.Outcome)
	}
	if s.Reason == "" {
		return invalid("reason is empty: say what was established, or why nobody can")
	}
	if s.Outcome != SettleHappened && (s.ExternalID != "" || len(s.Result) > 0) {
		return invalid("external_id and result are for an operation that happened")
	}
	if err := checkSize("reason", len(s.Reason), MaxText); err != nil {
		return err
	}
	if err := checkSize("external id", len(s.ExternalID), 1024); err != nil {
		return err
	}
	return checkSize("result", len(s.Result), MaxArgs)
}

// ValidateInput checks the input of Control.EnqueueInput: run id present,
// text of 1 to MaxText bytes.
func ValidateInput(runID, text string) error {
	if err := ValidateID("run id", runID); err != nil {
		return err
	}
	if text == "" {
		return invalid("input text is empty")
	}
	return checkSize("input text", len(text), MaxText)
}

// validAgentVersion: empty (a run without a version) or a sha256 in hex.
func validAgentVersion(v string) bool {
	if len(v) > 64 {
		return false
	}
	for _, c := range v {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
