package harness

// The version check: before a Step runs a run's records under another
// version of its agent than the one that wrote them, what the run has open
// is compared with the new definition (package agentver). A run that
// depends on something that changed stops for a person; otherwise it
// moves, with an agent_upgraded event naming both versions.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// Event types of the version check.
const (
	// EventAgentUpgraded: the run's records, written under data.from, go
	// on under data.to; data.changes names what differs.
	EventAgentUpgraded run.EventType = "agent_upgraded"
	// EventAgentUpgradeBlocked: they cannot; data.problems names what
	// the run depends on that changed, and the run waits for a person.
	EventAgentUpgradeBlocked run.EventType = "agent_upgrade_blocked"
)

// checkVersion runs first in a Step, before any pending operation is
// reconciled: an operation is reconciled under the contract of the
// version that recorded it, so a contract that changed stops the run here.
// from is the definition the run moved from, when it moved: its pending
// operations are reconciled under its contracts (recordedContract).
func checkVersion(ctx context.Context, e *env, tr *transcript, pl *plan, cur *cursor, pend *pending) (d Decision, stop bool, from *agentver.Definition, err error) {
	if pend.status == run.StatusNeedsHuman {
		return Decision{}, false, nil, nil
	}
	v, old, err := VersionVerdict(ctx, e.opt.Artifacts, e.agent, cur.recordsVersion(e.run.AgentVersion), func(from agentver.Definition) (agentver.Open, error) {
		return OpenRecords(ctx, e.opt.Store, e.run, from, pl.items, tr.openCalls())
	})
	switch {
	case err != nil:
		return Decision{}, true, nil, &RetryableError{Err: err}
	case v.Action == agentver.Stop:
		d, stop, err := versionStop(ctx, e, pl, pend, v)
		return d, stop, nil, err
	case v.Action == agentver.Move:
		pend.event(run.Event{Type: EventAgentUpgraded, Data: jsonObj("from", v.From, "to", v.To, "changes", v.Changes)})
		return Decision{}, false, old, nil
	}
	return Decision{}, false, nil, nil
}

// VersionVerdict decides, as a Step does, what becomes of a run whose
// records version from wrote when agent a runs it: Continue (same
// version, or nothing to compare: no version on either side), Move or
// Stop. open is called only when the records must be compared. old is
// from's definition when it was read. The preview command asks it too.
func VersionVerdict(ctx context.Context, arts artifact.Store, a Agent, from string, open func(from agentver.Definition) (agentver.Open, error)) (v agentver.Verdict, old *agentver.Definition, err error) {
	return DecideVersion(a, from, StoredDefinition(ctx, arts), open)
}

// DefinitionSource gives the definition of agent's version: missing, when
// not empty, says why there is none to check a run's records against (the
// run then stops for a person); err is a failure to read, not an answer.
type DefinitionSource func(agent, version string) (d agentver.Definition, missing string, err error)

// StoredDefinition is the [DefinitionSource] of a Step: the artifact
// store (agentver.Load); arts may be nil. The API serves what it gives
// (GET /v1/runs/{id}/version), so that upgrade-check --api decides on the
// same definition, or the same reason for its absence.
func StoredDefinition(ctx context.Context, arts artifact.Store) DefinitionSource {
	return func(agent, version string) (agentver.Definition, string, error) {
		if arts == nil {
			return agentver.Definition{}, "no artifact store to read the definition of " + agentver.Short(version) + " from", nil
		}
		d, err := agentver.Load(ctx, arts, agent, version)
		if errors.Is(err, agentver.ErrUnknown) {
			return agentver.Definition{}, "the definition of version " + agentver.Short(version) + " is not stored: nothing to check the run's records against", nil
		}
		return d, "", err
	}
}

// DecideVersion is [VersionVerdict] with from's definition read by def
// (called only when the versions must be compared): the one decision,
// whether the definition and the open records come from this process's
// stores or from a deployed API (upgrade-check --api).
func DecideVersion(a Agent, from string, def DefinitionSource, open func(from agentver.Definition) (agentver.Open, error)) (v agentver.Verdict, old *agentver.Definition, err error) {
	to := a.Version
	v = agentver.Verdict{Action: agentver.Continue, From: from, To: to}
	if to == "" || from == "" || from == to || a.Definition == nil {
		// A run created before versions, or an agent built without one
		// (tests), has nothing to compare.
		return v, nil, nil
	}
	v.Action = agentver.Stop
	d, missing, err := def(a.Name, from)
	switch {
	case err != nil:
		return v, nil, err
	case missing != "":
		v.Problems = []string{missing}
		return v, nil, nil
	}
	if a.Policy == agentver.Pin {
		v.Changes = agentver.Diff(d, *a.Definition)
		v.Problems = []string{fmt.Sprintf("the agent is pinned: the run was written by %s and this worker runs %s; run it with %s's build, or cancel it",
			agentver.Short(from), agentver.Short(to), agentver.Short(from))}
		return v, &d, nil
	}
	o, err := open(d)
	if err != nil {
		return v, nil, err
	}
	v = agentver.Check(d, *a.Definition, o, func(name string, args json.RawMessage) error {
		_, err := a.Tools.Validate(name, args)
		return err
	})
	return v, &d, nil
}

// UpgradeBlockedPrefix begins the error of a run the version check
// stopped ("agent version FROM → TO: problems"): a person resolves it
// (store.Resolver), there being nothing to settle.
const UpgradeBlockedPrefix = "agent version "

// RecordReader is what [OpenRecords] reads.
type RecordReader interface {
	ListOperations(ctx context.Context, runID string, pendingOnly bool) ([]run.Operation, error)
	ListApprovals(ctx context.Context, runID string) ([]run.Approval, error)
	ListInputs(ctx context.Context, runID string, pendingOnly bool) ([]run.Input, error)
	HasGrant(ctx context.Context, sessionID, tool string) (bool, error)
}

// OpenRecords gathers what a run has open for the version check: its
// pending operations, its approvals still pending or approved for a call
// not yet run, the open tool calls (calls; nil: the plan items that have
// not finished; neither counts a call whose approval was denied or
// cancelled: it is answered "denied", never made), the confirm_once tools of from (the old definition) its
// session holds a grant for, and its queued inputs. items are the run's
// plan items by call id. The preview command (upgrade-check) reads the
// same.
func OpenRecords(ctx context.Context, rr RecordReader, r run.Run, from agentver.Definition, items map[string]run.PlanItem, calls []model.ToolCall) (agentver.Open, error) {
	runID := r.ID
	var open agentver.Open
	var err error
	if open.Operations, err = rr.ListOperations(ctx, runID, true); err != nil {
		return open, err
	}
	aps, err := rr.ListApprovals(ctx, runID)
	if err != nil {
		return open, err
	}
	byID := map[string]run.PlanItem{}
	for _, it := range items {
		byID[it.ID] = it
	}
	// A call whose operation is pending was approved and dispatched
	// already: the operation is what the run depends on, judged by its
	// own rule (reconciled under the recorded contract), not its
	// approval's or its call's.
	covered := map[string]bool{}
	for _, op := range open.Operations {
		covered[op.PlanItemID] = true
	}
	// A call whose approval was denied or cancelled is never made: the
	// model is told so (permit), under whichever version reads it, so it
	// is not open.
	refused := map[string]bool{}
	for _, ap := range aps {
		if ap.Status == run.ApprovalDenied || ap.Status == run.ApprovalCancelled {
			refused[ap.PlanItemID] = true
		}
	}
	for _, ap := range aps {
		// A raise (RaiseLimitTool) is Keel's own request, not a call of
		// the agent's: no version defines it, and the Step that wakes
		// applies it (or has: it stays approved) under any version.
		if covered[ap.PlanItemID] || ap.Tool == RaiseLimitTool {
			continue
		}
		it, known := byID[ap.PlanItemID]
		unfinished := !known || it.Status == run.PlanPending || it.Status == run.PlanAwaitingApproval || it.Status == run.PlanRunning
		if ap.Status == run.ApprovalPending || (ap.Status == run.ApprovalApproved && unfinished) {
			open.Approvals = append(open.Approvals, ap)
		}
	}
	for _, c := range calls {
		if it, ok := items[c.ID]; !ok || !covered[it.ID] && !refused[it.ID] {
			open.Calls = append(open.Calls, agentver.Call{Tool: c.Name, Args: c.Args})
		}
	}
	if calls == nil {
		for _, it := range items {
			if covered[it.ID] || refused[it.ID] {
				continue
			}
			if it.Status == run.PlanPending || it.Status == run.PlanAwaitingApproval || it.Status == run.PlanRunning {
				open.Calls = append(open.Calls, agentver.Call{Tool: it.Tool, Args: it.Args})
			}
		}
	}
	for _, t := range from.Tools {
		if t.Mode != run.ModeConfirmOnce {
			continue
		}
		ok, err := rr.HasGrant(ctx, r.SessionID, t.Name)
		if err != nil {
			return open, err
		}
		if ok {
			open.Grants = append(open.Grants, t.Name)
		}
	}
	ins, err := rr.ListInputs(ctx, runID, true)
	if err != nil {
		return open, err
	}
	open.Inputs = len(ins)
	return open, nil
}

// leaseData is the lease_acquired event's data: each Step records the
// agent version that ran it.
func leaseData(owner string, token int64, version string) json.RawMessage {
	if version == "" {
		return jsonObj("owner", owner, "token", token)
	}
	return jsonObj("owner", owner, "token", token, "agent_version", version)
}

type contractAs struct {
	tool.Effectful
	c ops.Contract
}

func (e contractAs) Contract() ops.Contract { return e.c }

// CheckpointReader lists a run's checkpoints (store.Checkpoints).
type CheckpointReader interface {
	ListCheckpoints(ctx context.Context, runID string, afterSeq int64, limit int) ([]run.Checkpoint, error)
}

// RecordsVersion is the agent version that wrote r's records, as a Step
// would find it: the last of its checkpoints that names one, else the
// version r was created under ("" for a run from before versions). It
// reads every checkpoint state of the run: for the preview command, not
// for a Step's hot path.
func RecordsVersion(ctx context.Context, cr CheckpointReader, arts artifact.Store, r run.Run) (string, error) {
	v := r.AgentVersion
	var after int64
	for {
		page, err := cr.ListCheckpoints(ctx, r.ID, after, 1000)
		if err != nil {
			return "", err
		}
		for _, cp := range page {
			st, err := readState(ctx, arts, cp)
			if err != nil {
				return "", err
			}
			if st.AgentVersion != "" {
				v = st.AgentVersion
			}
		}
		if len(page) < 1000 {
			return v, nil
		}
		after = page[len(page)-1].Seq
	}
}

// versionStop puts the run in needs_human with the verdict's problems as
// its error: its pending approvals are cancelled (an approval given for
// the old arguments is never applied under the new code) and its pending
// operations marked needs_human (a person reconciles them under the old
// contract; one a person settled as not happened is left pending, for the
// old build's next attempt), in one commit.
func versionStop(ctx context.Context, e *env, pl *plan, pend *pending, v agentver.Verdict) (Decision, bool, error) {
	why := fmt.Sprintf(UpgradeBlockedPrefix+"%s → %s: %s", agentver.Short(v.From), agentver.Short(v.To), v.Reason())
	var c store.Commit
	pend.event(run.Event{Type: EventAgentUpgradeBlocked, Data: jsonObj("from", v.From, "to", v.To, "problems", v.Problems, "changes", v.Changes)})
	aps, err := e.opt.Store.ListApprovals(ctx, e.run.ID)
	if err != nil {
		return Decision{}, true, &RetryableError{Err: err}
	}
	for _, ap := range aps {
		if ap.Status == run.ApprovalPending {
			c.CancelApprovals = append(c.CancelApprovals, ap.ID)
			pend.event(run.Event{Type: run.EventApprovalCancelled, PlanItemID: ap.PlanItemID, Data: jsonObj("approval_id", ap.ID, "by", "agent_version")})
		}
	}
	ops, err := e.opt.Store.ListOperations(ctx, e.run.ID, true)
	if err != nil {
		return Decision{}, true, &RetryableError{Err: err}
	}
	for _, op := range ops {
		if it, ok := pl.byID(op.PlanItemID); ok && it.Status == run.PlanNeedsHuman {
			// A person established it did not happen
			// (store.SettleNotHappened): its outcome is known, and it
			// waits for its next attempt, which this version must not
			// make (resolve with the old build), not for a settle.
			continue
		}
		c.OperationUpdates = append(c.OperationUpdates, store.OperationUpdate{ID: op.ID, Status: run.OpNeedsHuman, Error: why})
		pend.event(run.Event{Type: run.EventOpNeedsHuman, PlanItemID: op.PlanItemID, OperationID: op.ID, Data: jsonObj("reason", why)})
		// As for any needs_human operation: its plan item says so, and a
		// person's settle (happened, not happened, give up) moves it on.
		if it, ok := pl.byID(op.PlanItemID); ok {
			it.Status, it.Result = run.PlanNeedsHuman, recordOf(tool.Result{Content: why}, true)
			pend.item(it)
		}
	}
	pend.event(run.Event{Type: run.EventRunNeedsHuman, Data: jsonObj("reason", why, "by", "agent_version")})
	pend.setStatus(run.StatusNeedsHuman)
	pend.setError(why)
	pend.releaseLease()
	if err := pend.flush(ctx, c); err != nil {
		return Decision{}, true, err
	}
	return Decision{Next: NextNeedsHuman, Error: why}, true, nil
}

// recordedContract is the effect as the version that recorded op's
// intent promised it: a pending operation is reconciled under that
// contract, never under a newer one (Check made sure the new code still
// keeps it).
func recordedContract(from *agentver.Definition, op run.Operation, eff tool.Effectful) tool.Effectful {
	if from == nil {
		return eff
	}
	old, ok := from.Tool(op.Tool)
	if !ok || !old.Effect {
		return eff
	}
	return contractAs{Effectful: eff, c: agentver.ParseContract(old.Contract)}
}
