package store

import "github.com/keelrun/keel/internal/kernel/run"

// CommitItems is the number of records c writes, as MaxItemsPerCommit
// counts them: the run row, each event, plan item, operation (new or
// updated), approval (new or cancelled), consumed input, the checkpoint,
// and two for each notification (a backend may write an outbox entry and
// a due marker). A writer that batches (the harness taking queued inputs)
// keeps its commits within MaxItemsPerCommit by this count.
func CommitItems(c *Commit) int {
	items := 1 + len(c.Events) + len(c.PlanItems) + len(c.NewOperations) + len(c.OperationUpdates) +
		len(c.NewApprovals) + len(c.CancelApprovals) + len(c.ConsumeInputs) + 2*len(c.Notifications)
	if c.Checkpoint != nil {
		items++
	}
	return items
}

// ValidateCommit checks the input of Committer.Commit and fills in the
// derived fields documented on Commit: plan item status (pending when
// empty), plan item, operation and approval args hashes (computed from the
// args; a given hash must agree), operation idempotency keys (the
// operation id when empty), and a checkpoint's RunID, StateHash and Size
// (from inline State). It refuses a commit of more than
// MaxItemsPerCommit items, unknown enum values, oversized or non-JSON
// data, a record naming another run, negative counters and an id that
// appears twice. It never modifies what c's slices and checkpoint point
// to: on success it replaces them with checked copies; on error it leaves
// c as it was.
func ValidateCommit(c *Commit) error {
	if err := ValidateID("run id", c.RunID); err != nil {
		return err
	}
	if items := CommitItems(c); items > MaxItemsPerCommit {
		return invalid("commit writes %d items, over %d", items, MaxItemsPerCommit)
	}
	if err := validateEvents(c.Events); err != nil {
		return err
	}
	if err := checkAmounts("used budget", c.Used); err != nil {
		return err
	}
	if err := checkAmounts("released budget", c.Released); err != nil {
		return err
	}
	if err := validateRunPatch(c.Run, c.Checkpoint); err != nil {
		return err
	}
	checkpoint, err := validateCheckpointCopy(c.RunID, c.Checkpoint)
	if err != nil {
		return err
	}
	once := idSet{}.once
	planItems, err := validateEach(c.PlanItems, func(pi *run.PlanItem) error {
		if err := validatePlanItem(c.RunID, pi); err != nil {
			return err
		}
		return once("plan item", pi.ID)
	})
	if err != nil {
		return err
	}
	newOps, err := validateEach(c.NewOperations, func(op *run.Operation) error {
		if err := validateNewOperation(c.RunID, op); err != nil {
			return err
		}
		return once("operation", op.ID)
	})
	if err != nil {
		return err
	}
	for _, u := range c.OperationUpdates {
		if err := validateOperationUpdate(u); err != nil {
			return err
		}
		if err := once("operation", u.ID); err != nil {
			return err
		}
	}
	newApprovals, err := validateEach(c.NewApprovals, func(a *run.Approval) error {
		if err := validateNewApproval(c.RunID, a); err != nil {
			return err
		}
		return once("approval", a.ID)
	})
	if err != nil {
		return err
	}
	if err := validateIDs("approval", c.CancelApprovals, once); err != nil {
		return err
	}
	if err := validateIDs("input", c.ConsumeInputs, once); err != nil {
		return err
	}
	notes, err := validateEach(c.Notifications, func(n *run.Notification) error {
		if err := validateNotification(c.RunID, n); err != nil {
			return err
		}
		return once("notification", n.ID)
	})
	if err != nil {
		return err
	}
	c.Notifications = notes
	c.Checkpoint, c.PlanItems, c.NewOperations, c.NewApprovals = checkpoint, planItems, newOps, newApprovals
	return nil
}

// validateCheckpointCopy validates a copy of cp (nil for none), which
// validation fills in, leaving the caller's checkpoint untouched.
func validateCheckpointCopy(runID string, cp *run.Checkpoint) (*run.Checkpoint, error) {
	if cp == nil {
		return nil, nil
	}
	c := *cp
	if err := validateCheckpoint(runID, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// idSet holds the kind and id of each record a commit names, so that a
// record named twice in one commit is refused.
type idSet map[string]bool

// once reports ErrInvalid when kind id was seen before, and records it.
func (seen idSet) once(kind, id string) error {
	if seen[kind+"\x00"+id] {
		return invalid("%s %q appears twice in one commit", kind, id)
	}
	seen[kind+"\x00"+id] = true
	return nil
}

// validateIDs checks each id of kind and that it appears once.
func validateIDs(kind string, ids []string, once func(kind, id string) error) error {
	for _, id := range ids {
		if err := ValidateID(kind+" id", id); err != nil {
			return err
		}
		if err := once(kind, id); err != nil {
			return err
		}
	}
	return nil
}

// validateEach runs check on a copy of each element of in and returns the
// checked copies, leaving in (the caller's slice) untouched. An empty in is
// returned as it is.
func validateEach[T any](in []T, check func(*T) error) ([]T, error) {
	if len(in) == 0 {
		return in, nil
	}
	out := make([]T, len(in))
	for i, v := range in {
		if err := check(&v); err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func validateRunPatch(p *RunPatch, cp *run.Checkpoint) error {
	if p == nil {
		return nil
	}
	if p.Status != "" && !p.Status.Valid() {
		return invalid("unknown run status %q", p.Status)
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"output", p.Output}, {"error", p.Error}, {"command", p.Command}} {
		if f.v != nil {
			if err := checkSize(f.name, len(*f.v), MaxText); err != nil {
				return err
			}
		}
	}
	if p.StepsDelta < 0 {
		return invalid("negative steps delta %d", p.StepsDelta)
	}
	if l := p.RaiseLimits; l.MaxSteps < 0 || l.MaxToolCalls < 0 || l.MaxTokens < 0 || l.MaxSpendMicroUSD < 0 || !l.Deadline.IsZero() {
		return invalid("raise limits %+v: amounts are never negative and a deadline is never raised", l)
	}
	if err := checkOptional("checkpoint id", p.CheckpointID); err != nil {
		return err
	}
	if cp != nil && p.CheckpointID != "" && p.CheckpointID != cp.ID {
		return invalid("run patch names checkpoint %q but the commit writes %q", p.CheckpointID, cp.ID)
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
	if err := ValidateID("checkpoint id", cp.ID); err != nil {
		return err
	}
	if err := sameRun(runID, cp.RunID, "checkpoint", cp.ID); err != nil {
		return err
	}
	if err := checkOptionals(field{"checkpoint parent", cp.Parent}, field{"checkpoint state ref", cp.StateRef},
		field{"checkpoint state hash", cp.StateHash}, field{"checkpoint workspace version", cp.WorkspaceVersion}); err != nil {
		return err
	}
	if err := checkSize("checkpoint state", len(cp.State), MaxInlineState); err != nil {
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
	if err := ValidateID("plan item id", pi.ID); err != nil {
		return err
	}
	if err := sameRun(runID, pi.RunID, "plan item", pi.ID); err != nil {
		return err
	}
	if err := ValidateID("plan item tool", pi.Tool); err != nil {
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
	if err := checkOptionals(field{"plan item call id", pi.CallID}, field{"plan item result ref", pi.ResultRef}); err != nil {
		return err
	}
	return checkJSON("plan item result", pi.Result, MaxEventData)
}

func validateNewOperation(runID string, op *run.Operation) error {
	if err := ValidateID("operation id", op.ID); err != nil {
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
	return checkOptionals(field{"operation plan item id", op.PlanItemID}, field{"operation tool", op.Tool},
		field{"operation destination", op.Destination}, field{"operation artifact hash", op.ArtifactHash},
		field{"operation idempotency key", op.IdempotencyKey})
}

func validateOperationUpdate(u OperationUpdate) error {
	if err := ValidateID("operation id", u.ID); err != nil {
		return err
	}
	switch u.Status {
	case run.OpSucceeded, run.OpFailed, run.OpNeedsHuman:
	case run.OpPending:
		if u.AttemptsDelta < 1 || u.ExternalID != "" || len(u.Result) > 0 {
			return invalid("operation %q: a new attempt (status pending) adds attempts and records no outcome", u.ID)
		}
	default:
		return invalid("operation %q: status %q is not an outcome (succeeded, failed, needs_human) or a new attempt (pending)", u.ID, u.Status)
	}
	if err := checkOptional("operation external id", u.ExternalID); err != nil {
		return err
	}
	if err := checkJSON("operation result", u.Result, MaxEventData); err != nil {
		return err
	}
	if err := checkSize("operation error", len(u.Error), MaxText); err != nil {
		return err
	}
	if u.AttemptsDelta < 0 {
		return invalid("operation %q: negative attempts delta", u.ID)
	}
	return nil
}

func validateNewApproval(runID string, a *run.Approval) error {
	if err := ValidateID("approval id", a.ID); err != nil {
		return err
	}
	if err := sameRun(runID, a.RunID, "approval", a.ID); err != nil {
		return err
	}
	if err := ValidateID("approval tool", a.Tool); err != nil {
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
	return checkSize("approval task token", len(a.TaskToken), MaxTaskToken)
}
