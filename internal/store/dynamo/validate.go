package dynamo

import (
	"encoding/json"
	"fmt"

	"github.com/keelrun/keel/internal/run"
	"github.com/keelrun/keel/internal/store"
)

// maxID bounds every id, owner, key, tool and reference string.
const maxID = 512

// maxTaskToken bounds a Step Functions task token (documented at 1024; room
// for growth).
const maxTaskToken = 8 << 10

func invalid(format string, args ...any) error {
	return fmt.Errorf("dynamo: %w: %s", store.ErrInvalid, fmt.Sprintf(format, args...))
}

func checkID(field, v string) error {
	if v == "" {
		return invalid("%s is empty", field)
	}
	if len(v) > maxID {
		return invalid("%s is %d bytes, over %d", field, len(v), maxID)
	}
	return nil
}

func checkOptional(field, v string) error {
	if len(v) > maxID {
		return invalid("%s is %d bytes, over %d", field, len(v), maxID)
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

// argsHash checks args and returns the hash to store: computed from args when
// present (a given hash must agree), else the given hash.
func argsHash(field string, args []byte, given string) (string, error) {
	if err := checkSize(field, len(args), store.MaxArgs); err != nil {
		return "", err
	}
	if len(args) == 0 {
		return given, nil
	}
	h, err := run.ArgsHash(args)
	if err != nil {
		return "", invalid("%s: %v", field, err)
	}
	if given != "" && given != h {
		return "", invalid("%s hash %q does not match the args (%s)", field, given, h)
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
	if len(t) > 64 {
		return invalid("event type %q is over 64 bytes", t)
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

func checkAmounts(a store.Amounts) error {
	if a.Tokens < 0 || a.SpendMicroUSD < 0 || a.ToolCalls < 0 {
		return invalid("negative amount %+v", a)
	}
	return nil
}

// The checks below are the same as the SQLite backend's, so both refuse
// the same input with the same sentinel.

func validateNewRun(r run.Run) (run.Run, error) {
	for _, f := range []struct{ name, v string }{{"run id", r.ID}, {"session id", r.SessionID}, {"owner", r.Owner}} {
		if err := checkID(f.name, f.v); err != nil {
			return r, err
		}
	}
	for _, f := range []struct{ name, v string }{{"agent", r.Agent}, {"client key", r.ClientKey},
		{"parent run id", r.ParentRunID}, {"fork checkpoint id", r.ForkCheckpointID}} {
		if err := checkOptional(f.name, f.v); err != nil {
			return r, err
		}
	}
	for _, f := range []struct{ name, v string }{{"request", r.Request}, {"command", r.Command}} {
		if err := checkSize(f.name, len(f.v), store.MaxText); err != nil {
			return r, err
		}
	}
	if r.Status != "" && r.Status != run.StatusCreated {
		return r, invalid("a new run has status created, not %q", r.Status)
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

func validateEvents(events []run.Event) error {
	for i, e := range events {
		if err := checkEventType(e.Type); err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
		if err := checkOptional("event plan item id", e.PlanItemID); err != nil {
			return err
		}
		if err := checkOptional("event operation id", e.OperationID); err != nil {
			return err
		}
		if err := checkJSON("event data", e.Data, store.MaxEventData); err != nil {
			return fmt.Errorf("event %d (%s): %w", i, e.Type, err)
		}
	}
	return nil
}

// validateCommit checks c and fills in the derived fields documented on
// Commit. It writes only to c's own slices' elements (copies made here).
func validateCommit(c *store.Commit) error {
	if err := checkID("run id", c.RunID); err != nil {
		return err
	}
	items := 1 + len(c.Events) + len(c.PlanItems) + len(c.NewOperations) + len(c.OperationUpdates) +
		len(c.NewApprovals) + len(c.CancelApprovals) + len(c.ConsumeInputs)
	if c.Checkpoint != nil {
		items++
	}
	if items > store.MaxItemsPerCommit {
		return invalid("commit writes %d items, over %d", items, store.MaxItemsPerCommit)
	}
	if err := validateEvents(c.Events); err != nil {
		return err
	}
	if err := checkAmounts(c.Used); err != nil {
		return fmt.Errorf("used budget: %w", err)
	}
	if err := checkAmounts(c.Released); err != nil {
		return fmt.Errorf("released budget: %w", err)
	}
	if p := c.Run; p != nil {
		if p.Status != "" && !p.Status.Valid() {
			return invalid("unknown run status %q", p.Status)
		}
		for _, f := range []struct {
			name string
			v    *string
		}{{"output", p.Output}, {"error", p.Error}, {"command", p.Command}} {
			if f.v != nil {
				if err := checkSize(f.name, len(*f.v), store.MaxText); err != nil {
					return err
				}
			}
		}
		if p.StepsDelta < 0 {
			return invalid("negative steps delta %d", p.StepsDelta)
		}
		if err := checkOptional("checkpoint id", p.CheckpointID); err != nil {
			return err
		}
		if c.Checkpoint != nil && p.CheckpointID != "" && p.CheckpointID != c.Checkpoint.ID {
			return invalid("run patch names checkpoint %q but the commit writes %q", p.CheckpointID, c.Checkpoint.ID)
		}
	}
	if c.Checkpoint != nil {
		cp := *c.Checkpoint
		if err := validateCheckpoint(c.RunID, &cp); err != nil {
			return err
		}
		c.Checkpoint = &cp
	}
	seen := map[string]bool{}
	once := func(kind, id string) error {
		if seen[kind+"\x00"+id] {
			return invalid("%s %q appears twice in one commit", kind, id)
		}
		seen[kind+"\x00"+id] = true
		return nil
	}
	if len(c.PlanItems) > 0 {
		items := make([]run.PlanItem, len(c.PlanItems))
		for i, pi := range c.PlanItems {
			if err := validatePlanItem(c.RunID, &pi); err != nil {
				return err
			}
			if err := once("plan item", pi.ID); err != nil {
				return err
			}
			items[i] = pi
		}
		c.PlanItems = items
	}
	if len(c.NewOperations) > 0 {
		ops := make([]run.Operation, len(c.NewOperations))
		for i, op := range c.NewOperations {
			if err := validateNewOperation(c.RunID, &op); err != nil {
				return err
			}
			if err := once("operation", op.ID); err != nil {
				return err
			}
			ops[i] = op
		}
		c.NewOperations = ops
	}
	for _, u := range c.OperationUpdates {
		if err := checkID("operation id", u.ID); err != nil {
			return err
		}
		if u.Status != run.OpSucceeded && u.Status != run.OpFailed && u.Status != run.OpNeedsHuman {
			return invalid("operation %q: status %q is not an outcome (succeeded, failed, needs_human)", u.ID, u.Status)
		}
		if err := checkOptional("operation external id", u.ExternalID); err != nil {
			return err
		}
		if err := checkJSON("operation result", u.Result, store.MaxEventData); err != nil {
			return err
		}
		if err := checkSize("operation error", len(u.Error), store.MaxText); err != nil {
			return err
		}
		if u.AttemptsDelta < 0 {
			return invalid("operation %q: negative attempts delta", u.ID)
		}
		if err := once("operation", u.ID); err != nil {
			return err
		}
	}
	if len(c.NewApprovals) > 0 {
		as := make([]run.Approval, len(c.NewApprovals))
		for i, a := range c.NewApprovals {
			if err := validateNewApproval(c.RunID, &a); err != nil {
				return err
			}
			if err := once("approval", a.ID); err != nil {
				return err
			}
			as[i] = a
		}
		c.NewApprovals = as
	}
	for _, id := range c.CancelApprovals {
		if err := checkID("approval id", id); err != nil {
			return err
		}
		if err := once("approval", id); err != nil {
			return err
		}
	}
	for _, id := range c.ConsumeInputs {
		if err := checkID("input id", id); err != nil {
			return err
		}
		if err := once("input", id); err != nil {
			return err
		}
	}
	return nil
}

func sameRun(runID, got, kind, id string) error {
	if got != "" && got != runID {
		return invalid("%s %q names run %q, not %q", kind, id, got, runID)
	}
	return nil
}

func validateCheckpoint(runID string, cp *run.Checkpoint) error {
	if err := checkID("checkpoint id", cp.ID); err != nil {
		return err
	}
	if err := sameRun(runID, cp.RunID, "checkpoint", cp.ID); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{{"checkpoint parent", cp.Parent}, {"checkpoint state ref", cp.StateRef},
		{"checkpoint state hash", cp.StateHash}, {"checkpoint workspace version", cp.WorkspaceVersion}} {
		if err := checkOptional(f.name, f.v); err != nil {
			return err
		}
	}
	if err := checkSize("checkpoint state", len(cp.State), store.MaxInlineState); err != nil {
		return err
	}
	if cp.Seq < 0 || cp.Step < 0 || cp.Size < 0 {
		return invalid("checkpoint %q: negative seq, step or size", cp.ID)
	}
	if len(cp.State) > 0 {
		h := run.HashBytes(cp.State)
		if cp.StateHash != "" && cp.StateHash != h {
			return invalid("checkpoint %q: state hash does not match the inline state", cp.ID)
		}
		cp.StateHash = h
		if cp.Size == 0 {
			cp.Size = int64(len(cp.State))
		}
	}
	cp.RunID = runID
	return nil
}

func validatePlanItem(runID string, pi *run.PlanItem) error {
	if err := checkID("plan item id", pi.ID); err != nil {
		return err
	}
	if err := sameRun(runID, pi.RunID, "plan item", pi.ID); err != nil {
		return err
	}
	if err := checkID("plan item tool", pi.Tool); err != nil {
		return err
	}
	if !pi.Mode.Valid() {
		return invalid("plan item %q: unknown mode %q", pi.ID, pi.Mode)
	}
	if pi.Status == "" {
		pi.Status = run.PlanPending
	}
	if !validPlanStatus(pi.Status) {
		return invalid("plan item %q: unknown status %q", pi.ID, pi.Status)
	}
	h, err := argsHash("plan item args", pi.Args, pi.ArgsHash)
	if err != nil {
		return err
	}
	pi.ArgsHash = h
	for _, f := range []struct{ name, v string }{{"plan item call id", pi.CallID}, {"plan item result ref", pi.ResultRef}} {
		if err := checkOptional(f.name, f.v); err != nil {
			return err
		}
	}
	return checkJSON("plan item result", pi.Result, store.MaxEventData)
}

func validateNewOperation(runID string, op *run.Operation) error {
	if err := checkID("operation id", op.ID); err != nil {
		return err
	}
	if err := sameRun(runID, op.RunID, "operation", op.ID); err != nil {
		return err
	}
	if op.Status != "" && op.Status != run.OpPending {
		return invalid("operation %q: a new operation is pending, not %q", op.ID, op.Status)
	}
	if op.Attempts < 0 {
		return invalid("operation %q: negative attempts", op.ID)
	}
	h, err := argsHash("operation args", op.Args, op.ArgsHash)
	if err != nil {
		return err
	}
	if h == "" {
		return invalid("operation %q: no args and no args hash", op.ID)
	}
	op.ArgsHash = h
	if op.IdempotencyKey == "" {
		op.IdempotencyKey = op.ID
	}
	for _, f := range []struct{ name, v string }{{"operation plan item id", op.PlanItemID}, {"operation tool", op.Tool},
		{"operation destination", op.Destination}, {"operation artifact hash", op.ArtifactHash},
		{"operation idempotency key", op.IdempotencyKey}} {
		if err := checkOptional(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

func validateNewApproval(runID string, a *run.Approval) error {
	if err := checkID("approval id", a.ID); err != nil {
		return err
	}
	if err := sameRun(runID, a.RunID, "approval", a.ID); err != nil {
		return err
	}
	if err := checkID("approval tool", a.Tool); err != nil {
		return err
	}
	if !a.Mode.Valid() {
		return invalid("approval %q: unknown mode %q", a.ID, a.Mode)
	}
	if a.Status != "" && a.Status != run.ApprovalPending {
		return invalid("approval %q: a new approval is pending, not %q", a.ID, a.Status)
	}
	h, err := argsHash("approval args", a.Args, a.ArgsHash)
	if err != nil {
		return err
	}
	if h == "" {
		return invalid("approval %q: no args and no args hash", a.ID)
	}
	a.ArgsHash = h
	if err := checkOptional("approval plan item id", a.PlanItemID); err != nil {
		return err
	}
	return checkSize("approval task token", len(a.TaskToken), maxTaskToken)
}
