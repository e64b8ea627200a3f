package telemetry

import (
	"encoding/json"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
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
	r := rebuilder{items: map[string]run.PlanItem{}, step: -1, openModel: -1,
		openTool: map[string]int{}, openOp: map[string]int{}, openAp: map[string]int{}, pendingAsks: []int{}}
	for _, it := range b.PlanItems {
		r.items[it.ID] = it
	}
	for _, e := range b.Events {
		r.event(e)
	}
	if r.step >= 0 {
		r.closeStepSpans(r.tl.Steps[r.step].End)
	}
	return r.tl
}

// rebuilder is the state of Rebuild between events: the spans open so far
// and where they sit in the timeline.
type rebuilder struct {
	tl        Timeline
	items     map[string]run.PlanItem
	step      int            // index in tl.Steps of the current step, -1 before the first
	openModel int            // index in tl.Models of the open model call, -1 for none
	openTool  map[string]int // plan item → index in tl.Tools
	openOp    map[string]int // operation → index in tl.Ops
	openAp    map[string]int // approval → index in tl.Approvals
	// One entry per call a model answer asked for (the answer's index in
	// tl.Models), taken in order as the calls start.
	pendingAsks []int
}

// event adds e to the timeline: to its step (a lease starts a new one),
// then to the span it opens or closes.
func (r *rebuilder) event(e run.Event) {
	d := decode(e)
	if e.Type == run.EventLeaseAcquired || r.step < 0 {
		if r.step >= 0 {
			r.closeStepSpans(r.tl.Steps[r.step].End)
		}
		r.tl.Steps = append(r.tl.Steps, StepSpan{Index: len(r.tl.Steps), Owner: d.Owner, Start: e.Time, End: e.Time, FirstSeq: e.Seq})
		r.step = len(r.tl.Steps) - 1
	}
	st := &r.tl.Steps[r.step]
	st.End, st.LastSeq = e.Time, e.Seq
	switch e.Type {
	case run.EventModelCallStarted:
		r.closeStepSpans(e.Time)
		r.tl.Models = append(r.tl.Models, ModelCall{Step: r.step, Start: e.Time, End: e.Time, Status: "unfinished"})
		r.openModel = len(r.tl.Models) - 1
	case run.EventModelCallCompleted:
		r.modelCompleted(e, d)
	case run.EventModelCallFailed, run.EventRateLimited:
		r.modelFailed(e, d)
	case run.EventToolStarted:
		it := r.items[e.PlanItemID]
		tc := ToolCall{Step: r.step, Start: e.Time, End: e.Time, Tool: d.Tool, PlanItemID: e.PlanItemID, CallID: it.CallID,
			OperationID: e.OperationID, InputHash: it.ArgsHash, Status: "unfinished", AskedBy: asker(&r.tl, &r.pendingAsks, d.Tool)}
		r.tl.Tools = append(r.tl.Tools, tc)
		r.openTool[e.PlanItemID] = len(r.tl.Tools) - 1
	case run.EventToolCompleted, run.EventToolFailed:
		r.toolEnded(e, d)
	case run.EventOpIntent:
		r.tl.Ops = append(r.tl.Ops, OpSpan{Step: r.step, Start: e.Time, End: e.Time, OperationID: e.OperationID, PlanItemID: e.PlanItemID,
			Tool: r.items[e.PlanItemID].Tool, Destination: d.Destination, Contract: d.Contract, Status: string(run.OpPending)})
		r.openOp[e.OperationID] = len(r.tl.Ops) - 1
	case run.EventOpUncertain:
		if i, ok := r.openOp[e.OperationID]; ok {
			r.tl.Ops[i].Uncertain++
			r.tl.Ops[i].End, r.tl.Ops[i].Reason = e.Time, d.Error
		}
	case run.EventOpSucceeded, run.EventOpReconciled, run.EventOpFailed, run.EventOpNeedsHuman:
		r.opEnded(e, d)
	case run.EventApprovalRequested:
		r.tl.Approvals = append(r.tl.Approvals, ApprovalWait{ApprovalID: d.ApprovalID, PlanItemID: e.PlanItemID, Tool: d.Tool,
			Mode: d.Mode, ArgsHash: d.ArgsHash, Start: e.Time, Status: string(run.ApprovalPending)})
		r.openAp[d.ApprovalID] = len(r.tl.Approvals) - 1
	case run.EventApprovalGranted, run.EventApprovalDenied, run.EventApprovalCancelled:
		r.approvalDecided(e, d)
	}
}

// closeStepSpans ends, at at, the model and tool calls the step left
// open: a new step or model call means they will not finish.
func (r *rebuilder) closeStepSpans(at time.Time) {
	if r.openModel >= 0 {
		r.tl.Models[r.openModel].End, r.tl.Models[r.openModel].Status = at, "unfinished"
		r.openModel = -1
	}
	for k, i := range r.openTool {
		r.tl.Tools[i].End, r.tl.Tools[i].Status = at, "unfinished"
		delete(r.openTool, k)
	}
}

// modelCompleted closes the open model call with its answer, and queues
// the tool calls it asked for.
func (r *rebuilder) modelCompleted(e run.Event, d evData) {
	if r.openModel < 0 {
		// No model_call_started: the completion stands for the
		// whole call.
		start := e.Time.Add(-time.Duration(d.DurationUS) * time.Microsecond)
		r.closeStepSpans(start)
		r.tl.Models = append(r.tl.Models, ModelCall{Step: r.step, Start: start, End: e.Time})
		r.openModel = len(r.tl.Models) - 1
	}
	m := &r.tl.Models[r.openModel]
	m.End, m.Status, m.Model = e.Time, "completed", d.Model
	m.InputTokens, m.OutputTokens, m.CostMicroUSD = d.Usage.InputTokens, d.Usage.OutputTokens, d.Cost
	m.StopReason, m.ResponseID, m.Retried = d.StopReason, d.ResponseID, d.RetriedCount
	for _, c := range d.Answer.Calls {
		m.Calls = append(m.Calls, c.Name)
		r.pendingAsks = append(r.pendingAsks, r.openModel)
	}
	r.openModel = -1
}

// modelFailed counts an attempt retried inside the open model call, or
// closes the call as failed (or rate limited).
func (r *rebuilder) modelFailed(e run.Event, d evData) {
	if string(d.Retried) == "true" {
		if r.openModel >= 0 {
			r.tl.Models[r.openModel].Retried++
		}
		return // an attempt retried inside the call, not its end
	}
	if r.openModel < 0 {
		return
	}
	m := &r.tl.Models[r.openModel]
	m.End, m.Status, m.Error = e.Time, "failed", d.Error
	if e.Type == run.EventRateLimited {
		m.Status = "rate_limited"
	}
	r.openModel = -1
}

// toolEnded closes the plan item's tool call with its outcome.
func (r *rebuilder) toolEnded(e run.Event, d evData) {
	i, ok := r.openTool[e.PlanItemID]
	if !ok {
		// Refused before it ran (no duration), or a call whose
		// tool_started was left out (its result carries the duration).
		it := r.items[e.PlanItemID]
		start := e.Time.Add(-time.Duration(d.DurationUS) * time.Microsecond)
		r.tl.Tools = append(r.tl.Tools, ToolCall{Step: r.step, Start: start, Tool: d.Tool, PlanItemID: e.PlanItemID, CallID: it.CallID,
			OperationID: e.OperationID, InputHash: it.ArgsHash, AskedBy: asker(&r.tl, &r.pendingAsks, d.Tool)})
		i = len(r.tl.Tools) - 1
	}
	delete(r.openTool, e.PlanItemID)
	tc := &r.tl.Tools[i]
	tc.End = e.Time
	switch {
	case e.Type == run.EventToolCompleted:
		tc.Status = "completed"
	case d.Dispatched != nil && !*d.Dispatched:
		tc.Status, tc.Error = "not_dispatched", d.Error
	default:
		tc.Status, tc.Error = "failed", d.Error
	}
}

// opEnded closes the operation's span with its outcome; needs_human also
// ends the tool call waiting on it.
func (r *rebuilder) opEnded(e run.Event, d evData) {
	i, ok := r.openOp[e.OperationID]
	if !ok {
		return
	}
	op := &r.tl.Ops[i]
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
		if ti, ok := r.openTool[e.PlanItemID]; ok {
			r.tl.Tools[ti].End, r.tl.Tools[ti].Status, r.tl.Tools[ti].Error = e.Time, "needs_human", d.Reason
			delete(r.openTool, e.PlanItemID)
		}
	}
	delete(r.openOp, e.OperationID)
}

// approvalDecided closes the approval's wait with its decision.
func (r *rebuilder) approvalDecided(e run.Event, d evData) {
	i, ok := r.openAp[d.ApprovalID]
	if !ok {
		return
	}
	ap := &r.tl.Approvals[i]
	ap.End, ap.DecidedBy = e.Time, d.DecidedBy+d.By
	switch e.Type {
	case run.EventApprovalGranted:
		ap.Status = string(run.ApprovalApproved)
	case run.EventApprovalDenied:
		ap.Status = string(run.ApprovalDenied)
	default:
		ap.Status = string(run.ApprovalCancelled)
	}
	delete(r.openAp, d.ApprovalID)
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
