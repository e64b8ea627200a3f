package dynamo

import (
	"context"
	"fmt"
	"sort"

	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/run"
)

// runItem is the run row of a new run r (stored, counters as given).
func runItem(r run.Run) item {
	it := item{"pk": sv(runPK(r.ID)), "sk": sv(runSK)}
	it.setS("id", r.ID)
	it.setS("session_id", r.SessionID)
	it.setS("owner", r.Owner)
	it.setS("agent", r.Agent)
	it.setS("client_key", r.ClientKey)
	it.setS("request", r.Request)
	it.setS("command", r.Command)
	it.setS("status", string(r.Status))
	it.setS("output", r.Output)
	it.setS("error", r.Error)
	it.setS("input_policy", string(r.InputPolicy))
	it.setN("max_steps", r.Limits.MaxSteps)
	it.setN("max_tool_calls", r.Limits.MaxToolCalls)
	it.setN("max_tokens", r.Limits.MaxTokens)
	it.setN("max_spend", r.Limits.MaxSpendMicroUSD)
	it.setT("deadline", r.Limits.Deadline)
	b := r.Budget
	it.setN("tok_used", b.TokensUsed)
	it.setN("tok_res", b.TokensReserved)
	it.setN("tok_total", b.TokensUsed+b.TokensReserved)
	it.setN("spend_used", b.SpendUsedMicroUSD)
	it.setN("spend_res", b.SpendReservedMicroUSD)
	it.setN("spend_total", b.SpendUsedMicroUSD+b.SpendReservedMicroUSD)
	it.setN("calls_used", b.ToolCallsUsed)
	it.setN("calls_res", b.ToolCallsReserved)
	it.setN("calls_total", b.ToolCallsUsed+b.ToolCallsReserved)
	it.setS("lease_owner", r.Lease.Owner)
	it.setN("lease_token", r.Lease.Token)
	if !r.Lease.Expiry.IsZero() {
		it.setT("lease_expiry", r.Lease.Expiry)
	}
	it["cancel"] = boolv(r.CancelRequested)
	it.setN("step_count", r.StepCount)
	it.setS("checkpoint_id", r.CheckpointID)
	it.setN("last_seq", r.LastSeq)
	it.setS("last_hash", r.LastHash)
	it.setN("cp_seq", 0)
	it.setN("ver", 1)
	it.setS("parent_run_id", r.ParentRunID)
	it.setS("fork_checkpoint_id", r.ForkCheckpointID)
	it.setS("trace_parent", r.TraceParent)
	it.setS("agent_version", r.AgentVersion)
	it.setS("caller_run_id", r.Caller.RunID)
	it.setS("caller_item_id", r.Caller.PlanItemID)
	it.setS("caller_op_id", r.Caller.OperationID)
	if r.Caller.Depth != 0 {
		it.setN("depth", r.Caller.Depth)
	}
	it.setT("created_at", r.CreatedAt)
	it.setT("updated_at", r.UpdatedAt)
	// Index keys: see doc.go.
	it.setS("g_all", runSK)
	it.setS("g_status", string(r.Status))
	it.setS("g_session", r.SessionID)
	it.setS("g_owner", r.Owner)
	it.setS("g_sort", sortKey(r.CreatedAt, r.ID))
	return it
}

func itemToRun(it item) run.Run {
	return run.Run{
		ID:          it.s("id"),
		SessionID:   it.s("session_id"),
		Owner:       it.s("owner"),
		Agent:       it.s("agent"),
		ClientKey:   it.s("client_key"),
		Request:     it.s("request"),
		Command:     it.s("command"),
		Status:      run.Status(it.s("status")),
		Output:      it.s("output"),
		Error:       it.s("error"),
		InputPolicy: run.InputPolicy(it.s("input_policy")),
		Limits: run.Limits{MaxSteps: it.n("max_steps"), MaxToolCalls: it.n("max_tool_calls"),
			MaxTokens: it.n("max_tokens"), MaxSpendMicroUSD: it.n("max_spend"), Deadline: it.t("deadline")},
		Budget: run.Budget{TokensUsed: it.n("tok_used"), TokensReserved: it.n("tok_res"),
			SpendUsedMicroUSD: it.n("spend_used"), SpendReservedMicroUSD: it.n("spend_res"),
			ToolCallsUsed: it.n("calls_used"), ToolCallsReserved: it.n("calls_res")},
		Lease:            run.Lease{Owner: it.s("lease_owner"), Token: it.n("lease_token"), Expiry: it.t("lease_expiry")},
		CancelRequested:  it.bool("cancel"),
		StepCount:        it.n("step_count"),
		CheckpointID:     it.s("checkpoint_id"),
		LastSeq:          it.n("last_seq"),
		LastHash:         it.s("last_hash"),
		ParentRunID:      it.s("parent_run_id"),
		ForkCheckpointID: it.s("fork_checkpoint_id"),
		TraceParent:      it.s("trace_parent"),
		AgentVersion:     it.s("agent_version"),
		CreatedAt:        it.t("created_at"),
		UpdatedAt:        it.t("updated_at"),
		Caller: run.Caller{RunID: it.s("caller_run_id"), PlanItemID: it.s("caller_item_id"),
			OperationID: it.s("caller_op_id"), Depth: it.n("depth")},
	}
}

func itemToEvent(runID string, it item) run.Event {
	return run.Event{RunID: runID, Seq: it.n("seq"), Type: run.EventType(it.s("type")), Time: it.t("time"),
		PlanItemID: it.s("plan_item_id"), OperationID: it.s("operation_id"), Data: it.b("data"),
		PrevHash: it.s("prev_hash"), Hash: it.s("hash")}
}

func opItem(runID string, op run.Operation, ord int64) item {
	it := item{"pk": sv(runPK(runID)), "sk": sv(opSK(op.ID))}
	it.setS("id", op.ID)
	it.setS("plan_item_id", op.PlanItemID)
	it.setS("tool", op.Tool)
	it.setS("destination", op.Destination)
	it.setB("args", op.Args)
	it.setS("args_hash", op.ArgsHash)
	it.setS("artifact_hash", op.ArtifactHash)
	it.setS("idempotency_key", op.IdempotencyKey)
	it.setS("status", string(op.Status))
	it.setS("external_id", op.ExternalID)
	it.setB("result", op.Result)
	it.setS("error", op.Error)
	it.setN("attempts", op.Attempts)
	it.setT("created_at", op.CreatedAt)
	it.setT("updated_at", op.UpdatedAt)
	it.setN("ord", ord)
	return it
}

func itemToOp(runID string, it item) run.Operation {
	return run.Operation{ID: it.s("id"), RunID: runID, PlanItemID: it.s("plan_item_id"), Tool: it.s("tool"),
		Destination: it.s("destination"), Args: it.b("args"), ArgsHash: it.s("args_hash"),
		ArtifactHash: it.s("artifact_hash"), IdempotencyKey: it.s("idempotency_key"),
		Status: run.OpStatus(it.s("status")), ExternalID: it.s("external_id"), Result: it.b("result"),
		Error: it.s("error"), Attempts: it.n("attempts"), CreatedAt: it.t("created_at"), UpdatedAt: it.t("updated_at")}
}

func approvalItem(runID string, a run.Approval, ord int64) item {
	it := item{"pk": sv(runPK(runID)), "sk": sv(approvalSK(a.ID))}
	it.setS("id", a.ID)
	it.setS("session_id", a.SessionID)
	it.setS("plan_item_id", a.PlanItemID)
	it.setS("tool", a.Tool)
	it.setS("mode", string(a.Mode))
	it.setB("args", a.Args)
	it.setS("args_hash", a.ArgsHash)
	it.setS("status", string(a.Status))
	it.setS("decided_by", a.DecidedBy)
	it.setS("reason", a.Reason)
	it.setS("task_token", a.TaskToken)
	it.setT("created_at", a.CreatedAt)
	if !a.DecidedAt.IsZero() {
		it.setT("decided_at", a.DecidedAt)
	}
	it.setN("ord", ord)
	return it
}

func itemToApproval(runID string, it item) run.Approval {
	return run.Approval{ID: it.s("id"), RunID: runID, SessionID: it.s("session_id"), PlanItemID: it.s("plan_item_id"),
		Tool: it.s("tool"), Mode: run.Mode(it.s("mode")), Args: it.b("args"), ArgsHash: it.s("args_hash"),
		Status: run.ApprovalStatus(it.s("status")), DecidedBy: it.s("decided_by"), Reason: it.s("reason"),
		TaskToken: it.s("task_token"), CreatedAt: it.t("created_at"), DecidedAt: it.t("decided_at")}
}

func planItemItem(runID string, pi run.PlanItem) item {
	it := item{"pk": sv(runPK(runID)), "sk": sv(planSK(pi.ID))}
	it.setS("id", pi.ID)
	it.setN("order", pi.Order)
	it.setS("tool", pi.Tool)
	it.setB("args", pi.Args)
	it.setS("args_hash", pi.ArgsHash)
	it.setS("mode", string(pi.Mode))
	it.setS("status", string(pi.Status))
	it.setS("call_id", pi.CallID)
	it.setS("result_ref", pi.ResultRef)
	it.setB("result", pi.Result)
	it.setT("updated_at", pi.UpdatedAt)
	return it
}

func itemToPlanItem(runID string, it item) run.PlanItem {
	return run.PlanItem{ID: it.s("id"), RunID: runID, Order: it.n("order"), Tool: it.s("tool"), Args: it.b("args"),
		ArgsHash: it.s("args_hash"), Mode: run.Mode(it.s("mode")), Status: run.PlanStatus(it.s("status")),
		CallID: it.s("call_id"), ResultRef: it.s("result_ref"), Result: it.b("result"), UpdatedAt: it.t("updated_at")}
}

func inputItem(in run.Input, ord int64) item {
	it := item{"pk": sv(runPK(in.RunID)), "sk": sv(inputSK(in.ID))}
	it.setS("id", in.ID)
	it.setS("text", in.Text)
	it["consumed"] = boolv(in.Consumed)
	it.setT("received_at", in.ReceivedAt)
	it.setN("ord", ord)
	return it
}

func itemToInput(runID string, it item) run.Input {
	return run.Input{RunID: runID, ID: it.s("id"), Text: it.s("text"), Consumed: it.bool("consumed"),
		ReceivedAt: it.t("received_at")}
}

// spill is where a checkpoint's state went when it was too large to keep
// inline.
type spill struct {
	key  artifact.Key
	hash string
}

func checkpointItem(runID string, cp run.Checkpoint, sp *spill) item {
	it := item{"pk": sv(runPK(runID)), "sk": sv(cpSK(cp.Seq))}
	it.setS("id", cp.ID)
	it.setN("seq", cp.Seq)
	it.setS("parent", cp.Parent)
	it.setN("step", cp.Step)
	if sp != nil {
		it.setS("spill_key", sp.key.Path())
		it.setS("spill_sha256", sp.hash)
	} else {
		it.setB("state", cp.State)
	}
	it.setS("state_ref", cp.StateRef)
	it.setS("state_hash", cp.StateHash)
	it.setN("size", cp.Size)
	it.setS("workspace_version", cp.WorkspaceVersion)
	it.setT("created_at", cp.CreatedAt)
	return it
}

// itemToCheckpoint decodes a checkpoint, reading spilled state back from
// the artifact store and checking it against the hash the item holds.
func (s *Store) itemToCheckpoint(ctx context.Context, runID string, it item) (run.Checkpoint, error) {
	cp := run.Checkpoint{ID: it.s("id"), RunID: runID, Seq: it.n("seq"), Parent: it.s("parent"), Step: it.n("step"),
		State: it.b("state"), StateRef: it.s("state_ref"), StateHash: it.s("state_hash"), Size: it.n("size"),
		WorkspaceVersion: it.s("workspace_version"), CreatedAt: it.t("created_at")}
	if p := it.s("spill_key"); p != "" {
		if s.artifacts == nil {
			return run.Checkpoint{}, fmt.Errorf("dynamo: checkpoint %q state is in %s but no artifact store is configured", cp.ID, p)
		}
		k, err := artifact.ParsePath(p)
		if err != nil {
			return run.Checkpoint{}, fmt.Errorf("dynamo: checkpoint %q: %w", cp.ID, err)
		}
		data, info, err := s.artifacts.Get(ctx, k)
		if err != nil {
			return run.Checkpoint{}, fmt.Errorf("dynamo: checkpoint %q state: %w", cp.ID, err)
		}
		if info.SHA256 != it.s("spill_sha256") {
			return run.Checkpoint{}, fmt.Errorf("dynamo: checkpoint %q state: %w: blob hash %s, item says %s",
				cp.ID, artifact.ErrCorrupt, info.SHA256, it.s("spill_sha256"))
		}
		cp.State = data
	}
	return cp, nil
}

// byOrd sorts child items by their insertion ordinal.
func byOrd(items []item) {
	sort.SliceStable(items, func(i, j int) bool { return items[i].n("ord") < items[j].n("ord") })
}
