package telemetry

import (
	"encoding/json"
	"time"

	"github.com/keelrun/keel/internal/run"
)

// Timeline is a run rebuilt from its event log: its Steps and, within
// them, each model call, tool call, operation and approval wait, with
// start and end times taken from the events' timestamps. It is what
// trace.json, tool_calls.csv and `keel explain` are made of, so the three
// never disagree.
//
// Event times are the harness's clock when it recorded each event, so a
// span's duration is what the worker saw; a Step that died before its
// commit left no events, and so no span.
type Timeline struct {
	Steps     []StepSpan
	Models    []ModelCall
	Tools     []ToolCall
	Ops       []OpSpan
	Approvals []ApprovalWait
}

// StepSpan is one Step of the harness: from its lease_acquired to the last
// event before the next one.
type StepSpan struct {
	Index      int // from 0
	Owner      string
	Start, End time.Time
	FirstSeq   int64
	LastSeq    int64
}

// ModelCall is one model call, from model_call_started to its completion
// or failure (a completed call's start is its completion less duration_us:
// the harness leaves out a started event that lands in the same commit).
type ModelCall struct {
	Step         int
	Start, End   time.Time
	Model        string
	InputTokens  int64
	OutputTokens int64
	CostMicroUSD int64
	// Status: completed, failed, rate_limited (a durable wait follows) or
	// unfinished (the Step ended without its answer).
	Status     string
	Error      string
	StopReason string
	ResponseID string
	Retried    int
	// Calls are the names of the tools the answer asked for, in order.
	Calls []string
}

// ToolCall is one tool call: a plan item from tool_started (or, when that
// was left out, the result's time less its duration_us) to tool_completed
// or tool_failed.
type ToolCall struct {
	Step        int
	Start, End  time.Time
	Tool        string
	PlanItemID  string
	CallID      string
	OperationID string
	// InputHash is the plan item's args hash: two calls with the same tool
	// and hash are the same call repeated.
	InputHash string
	// Status: completed, failed, not_dispatched (refused before it ran:
	// invalid arguments, no budget), needs_human, or unfinished.
	Status string
	Error  string
	// AskedBy is the index in Timeline.Models of the model call whose
	// answer asked for this call; -1 when unknown.
	AskedBy int
}

// Latency is End - Start.
func (c ToolCall) Latency() time.Duration { return c.End.Sub(c.Start) }

// OpSpan is an operation of the protocol, from op_intent to its recorded
// outcome (succeeded, failed, reconciled, needs_human) or still pending.
type OpSpan struct {
	Step        int
	Start, End  time.Time
	OperationID string
	PlanItemID  string
	Tool        string
	Destination string
	Contract    string
	Status      string
	Reason      string
	Uncertain   int // op_uncertain events: dispatches or lookups with no answer
}

// ApprovalWait is the time an approval waited for a person.
type ApprovalWait struct {
	ApprovalID string
	PlanItemID string
	Tool       string
	Mode       string
	ArgsHash   string
	Start, End time.Time
	// Status: pending, approved, denied or cancelled.
	Status    string
	DecidedBy string
}

// evData is the union of the event payload fields the timeline reads.
type evData struct {
	Owner      string `json:"owner"`
	Tool       string `json:"tool"`
	Error      string `json:"error"`
	Dispatched *bool  `json:"dispatched"`
	Model      string `json:"model"`
	Usage      struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	} `json:"usage"`
	Cost         int64           `json:"cost_micro_usd"`
	StopReason   string          `json:"stop_reason"`
	ResponseID   string          `json:"response_id"`
	Retried      json.RawMessage `json:"retried"`
	RetriedCount int             `json:"retried_attempts"`
	DurableWait  bool            `json:"durable_wait"`
	ApprovalID   string          `json:"approval_id"`
	Mode         string          `json:"mode"`
	ArgsHash     string          `json:"args_hash"`
	DecidedBy    string          `json:"decided_by"`
	By           string          `json:"by"`
	Destination  string          `json:"destination"`
	Contract     string          `json:"contract"`
	Reason       string          `json:"reason"`
	// DurationUS is on a model_call_completed, tool_completed or
	// tool_failed whose started event was left out (it would have landed in
	// the same commit): the call began that long before the event.
	DurationUS int64 `json:"duration_us"`
	Answer     struct {
		Calls []struct {
			Name string `json:"name"`
		} `json:"calls"`
	} `json:"answer"`
}

func decode(e run.Event) evData {
	var d evData
	if len(e.Data) > 0 {
		_ = json.Unmarshal(e.Data, &d) // a payload of another shape reads as empty fields
	}
	return d
}

// Rebuild derives the timeline of a bundle's records.
func Rebuild(b Bundle) Timeline {
	var tl Timeline
	items := map[string]run.PlanItem{}
	for _, it := range b.PlanItems {
		items[it.ID] = it
	}
	step := -1
	openModel := -1
	openTool := map[string]int{} // plan item → index in tl.Tools
	openOp := map[string]int{}
	openAp := map[string]int{}
	// One entry per call a model answer asked for (the answer's index in
	// tl.Models), taken in order as the calls start.
	pendingAsks := []int{}
	closeStepSpans := func(at time.Time) {
		if openModel >= 0 {
			tl.Models[openModel].End, tl.Models[openModel].Status = at, "unfinished"
			openModel = -1
		}
		for k, i := range openTool {
			tl.Tools[i].End, tl.Tools[i].Status = at, "unfinished"
			delete(openTool, k)
		}
	}
	for _, e := range b.Events {
		d := decode(e)
		if e.Type == run.EventLeaseAcquired || step < 0 {
			if step >= 0 {
				closeStepSpans(tl.Steps[step].End)
			}
			tl.Steps = append(tl.Steps, StepSpan{Index: len(tl.Steps), Owner: d.Owner, Start: e.Time, End: e.Time, FirstSeq: e.Seq})
			step = len(tl.Steps) - 1
		}
		st := &tl.Steps[step]
		st.End, st.LastSeq = e.Time, e.Seq
		switch e.Type {
		case run.EventModelCallStarted:
			closeStepSpans(e.Time)
			tl.Models = append(tl.Models, ModelCall{Step: step, Start: e.Time, End: e.Time, Status: "unfinished"})
			openModel = len(tl.Models) - 1
		case run.EventModelCallCompleted:
			if openModel < 0 {
				// No model_call_started: the completion stands for the
				// whole call.
				start := e.Time.Add(-time.Duration(d.DurationUS) * time.Microsecond)
				closeStepSpans(start)
				tl.Models = append(tl.Models, ModelCall{Step: step, Start: start, End: e.Time})
				openModel = len(tl.Models) - 1
			}
			m := &tl.Models[openModel]
			m.End, m.Status, m.Model = e.Time, "completed", d.Model
			m.InputTokens, m.OutputTokens, m.CostMicroUSD = d.Usage.InputTokens, d.Usage.OutputTokens, d.Cost
			m.StopReason, m.ResponseID, m.Retried = d.StopReason, d.ResponseID, d.RetriedCount
			for _, c := range d.Answer.Calls {
				m.Calls = append(m.Calls, c.Name)
				pendingAsks = append(pendingAsks, openModel)
			}
			openModel = -1
		case run.EventModelCallFailed, run.EventRateLimited:
			if string(d.Retried) == "true" {
				if openModel >= 0 {
					tl.Models[openModel].Retried++
				}
				break // an attempt retried inside the call, not its end
			}
			if openModel < 0 {
				break
			}
			m := &tl.Models[openModel]
			m.End, m.Status, m.Error = e.Time, "failed", d.Error
			if e.Type == run.EventRateLimited {
				m.Status = "rate_limited"
			}
			openModel = -1
		case run.EventToolStarted:
			it := items[e.PlanItemID]
			tc := ToolCall{Step: step, Start: e.Time, End: e.Time, Tool: d.Tool, PlanItemID: e.PlanItemID, CallID: it.CallID,
				OperationID: e.OperationID, InputHash: it.ArgsHash, Status: "unfinished", AskedBy: asker(&tl, &pendingAsks, d.Tool)}
			tl.Tools = append(tl.Tools, tc)
			openTool[e.PlanItemID] = len(tl.Tools) - 1
		case run.EventToolCompleted, run.EventToolFailed:
			i, ok := openTool[e.PlanItemID]
			if !ok {
				// Refused before it ran (no duration), or a call whose
				// tool_started was left out (its result carries the duration).
				it := items[e.PlanItemID]
				start := e.Time.Add(-time.Duration(d.DurationUS) * time.Microsecond)
				tl.Tools = append(tl.Tools, ToolCall{Step: step, Start: start, Tool: d.Tool, PlanItemID: e.PlanItemID, CallID: it.CallID,
					OperationID: e.OperationID, InputHash: it.ArgsHash, AskedBy: asker(&tl, &pendingAsks, d.Tool)})
				i = len(tl.Tools) - 1
			}
			delete(openTool, e.PlanItemID)
			tc := &tl.Tools[i]
			tc.End = e.Time
			switch {
			case e.Type == run.EventToolCompleted:
				tc.Status = "completed"
			case d.Dispatched != nil && !*d.Dispatched:
				tc.Status, tc.Error = "not_dispatched", d.Error
			default:
				tc.Status, tc.Error = "failed", d.Error
			}
		case run.EventOpIntent:
			tl.Ops = append(tl.Ops, OpSpan{Step: step, Start: e.Time, End: e.Time, OperationID: e.OperationID, PlanItemID: e.PlanItemID,
				Tool: items[e.PlanItemID].Tool, Destination: d.Destination, Contract: d.Contract, Status: string(run.OpPending)})
			openOp[e.OperationID] = len(tl.Ops) - 1
		case run.EventOpUncertain:
			if i, ok := openOp[e.OperationID]; ok {
				tl.Ops[i].Uncertain++
				tl.Ops[i].End, tl.Ops[i].Reason = e.Time, d.Error
			}
		case run.EventOpSucceeded, run.EventOpReconciled, run.EventOpFailed, run.EventOpNeedsHuman:
			i, ok := openOp[e.OperationID]
			if !ok {
				break
			}
			op := &tl.Ops[i]
			op.End = e.Time
			switch e.Type {
			case run.EventOpSucceeded:
				op.Status = string(run.OpSucceeded)
			case run.EventOpReconciled:
				op.Status = "reconciled"
			case run.EventOpFailed:
				op.Status, op.Reason = string(run.OpFailed), d.Error
			case run.EventOpNeedsHuman:
				op.Status, op.Reason = string(run.OpNeedsHuman), d.Reason
				if ti, ok := openTool[e.PlanItemID]; ok {
					tl.Tools[ti].End, tl.Tools[ti].Status, tl.Tools[ti].Error = e.Time, "needs_human", d.Reason
					delete(openTool, e.PlanItemID)
				}
			}
			delete(openOp, e.OperationID)
		case run.EventApprovalRequested:
			tl.Approvals = append(tl.Approvals, ApprovalWait{ApprovalID: d.ApprovalID, PlanItemID: e.PlanItemID, Tool: d.Tool,
				Mode: d.Mode, ArgsHash: d.ArgsHash, Start: e.Time, Status: string(run.ApprovalPending)})
			openAp[d.ApprovalID] = len(tl.Approvals) - 1
		case run.EventApprovalGranted, run.EventApprovalDenied, run.EventApprovalCancelled:
			i, ok := openAp[d.ApprovalID]
			if !ok {
				break
			}
			ap := &tl.Approvals[i]
			ap.End, ap.DecidedBy = e.Time, d.DecidedBy+d.By
			switch e.Type {
			case run.EventApprovalGranted:
				ap.Status = string(run.ApprovalApproved)
			case run.EventApprovalDenied:
				ap.Status = string(run.ApprovalDenied)
			default:
				ap.Status = string(run.ApprovalCancelled)
			}
			delete(openAp, d.ApprovalID)
		}
	}
	if step >= 0 {
		closeStepSpans(tl.Steps[step].End)
	}
	return tl
}

// asker takes, from the queue of calls model answers asked for, the
// oldest one naming tool: the model call that asked for this tool call.
func asker(tl *Timeline, queue *[]int, tool string) int {
	for i, m := range *queue {
		names := tl.Models[m].Calls
		for _, n := range names {
			if n == tool {
				*queue = append((*queue)[:i:i], (*queue)[i+1:]...)
				return m
			}
		}
	}
	return -1
}
