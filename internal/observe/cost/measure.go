package cost

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
)

// Resources are the deployment's sizes that turn durations into billed
// units. [DefaultResources] are the CDK app's defaults (infra/cdk
// functions.go and config.go).
type Resources struct {
	StepMemoryMiB     int64 `json:"step_memory_mib"`
	ApprovalMemoryMiB int64 `json:"approval_memory_mib"`
	FinalizeMemoryMiB int64 `json:"finalize_memory_mib"`
	APIMemoryMiB      int64 `json:"api_memory_mib"`
	// TaskVCPU and TaskMemoryMiB size the long-running Fargate task.
	TaskVCPU      float64 `json:"task_vcpu"`
	TaskMemoryMiB int64   `json:"task_memory_mib"`
	// ShortCall is the billed duration assumed for an invocation the
	// records give no times for (an API request, the approval function
	// recording a task token).
	ShortCall time.Duration `json:"short_call_ns"`
}

// DefaultResources are the CDK app's defaults: step 1024 MiB, API and
// finalize 512 MiB, approval 256 MiB, the task 1 vCPU and 2048 MiB; an
// untimed call is billed 50 ms.
func DefaultResources() Resources {
	return Resources{StepMemoryMiB: 1024, ApprovalMemoryMiB: 256, FinalizeMemoryMiB: 512, APIMemoryMiB: 512,
		TaskVCPU: 1, TaskMemoryMiB: 2048, ShortCall: 50 * time.Millisecond}
}

// Records are what Measure reads of one run.
type Records struct {
	Run         run.Run
	Events      []run.Event // the whole log, in seq order
	Checkpoints []run.Checkpoint
	// ArtifactBytes are the sizes of the run's artifacts, one per object.
	ArtifactBytes []int64
}

// Usage is what a run consumed, in each service's billed units.
type Usage struct {
	StateTransitions int64 `json:"state_transitions"`
	// StepInvocations are the harness Steps run on Lambda; Lambda* count
	// every function (API, step, approval, finalize).
	StepInvocations   int64   `json:"step_invocations"`
	StepSeconds       float64 `json:"step_seconds"`
	LambdaInvocations int64   `json:"lambda_invocations"`
	LambdaGBSeconds   float64 `json:"lambda_gb_seconds"`
	DynamoWRU         int64   `json:"dynamodb_wru"`
	DynamoRRU         int64   `json:"dynamodb_rru"`
	S3Puts            int64   `json:"s3_puts"`
	S3Gets            int64   `json:"s3_gets"`
	S3BytesWritten    int64   `json:"s3_bytes_written"`
	FargateTasks      int64   `json:"fargate_tasks"`
	// FargateSeconds are billed seconds (a task's minute minimum applied).
	FargateSeconds     float64 `json:"fargate_seconds"`
	Tokens             int64   `json:"tokens"`
	ModelSpendMicroUSD int64   `json:"model_spend_micro_usd"`
}

// Item overheads: the key attributes and bookkeeping a stored record
// carries beyond its JSON (partition and sort key, type, hash chain).
const (
	itemOverhead = 100
	wruBytes     = 1024
	rruBytes     = 4096
)

// Transitions of the state machine (stepfunctions/run.asl.json) per
// thing that happens: a Step is Step → Count → Route; an approval adds
// AwaitApproval; a long task is RunOnFargate → Count → Route; a finished
// run is Finalize → Outcome → Done (or a Fail state); Init starts it.
const (
	transInit     = 1
	transStep     = 3
	transApproval = 1
	transTask     = 3
	transFinal    = 3
)

// external are the events the API writes, outside any invocation of the
// harness: they do not extend the invocation they fall in.
var external = map[run.EventType]bool{
	run.EventRunCreated: true, run.EventApprovalGranted: true, run.EventApprovalDenied: true,
	run.EventInputReceived: true, run.EventCancelRequested: true,
}

// Measure derives the run's usage from its records: each lease_acquired
// event opens one invocation (its owner says on what: "fargate/…" is the
// long-running task, ".../finalize/…" the finalize function, anything else
// a Step), which lasts until the last event written before the next one.
func Measure(rec Records, res Resources) Usage {
	m := meter{u: Usage{Tokens: rec.Run.Budget.TokensUsed, ModelSpendMicroUSD: rec.Run.Budget.SpendUsedMicroUSD},
		spilled: map[string]bool{}, cpSize: map[string]int64{}}
	m.checkpoints(rec.Checkpoints)
	m.runSize = jsonSize(rec.Run) + itemOverhead
	for _, ev := range rec.Events {
		m.event(ev)
	}
	m.closeSeg()
	return m.total(rec, res)
}

// meter is Measure's tally while it walks a run's events.
type meter struct {
	u       Usage
	spilled map[string]bool  // checkpoint id → its state is in S3
	cpSize  map[string]int64 // checkpoint id → inline state bytes
	runSize int64            // bytes of the run row

	stepSec, taskSec, finalizeSec float64
	finalizes, approvals, calls   int64
	planBytes, latestCp           int64
	latestSpilled                 bool
	commits                       int64
	cur                           *segment // the lease holder's segment, nil between
}

// segment is one lease holder's stretch of the run: a step invocation, a
// Fargate task or a finalize.
type segment struct {
	owner       string
	start, last time.Time
}

// checkpoints records each checkpoint's inline size, and counts the S3 put
// of each spilled state.
func (m *meter) checkpoints(cps []run.Checkpoint) {
	for _, c := range cps {
		m.spilled[c.ID] = c.StateRef != ""
		if c.StateRef == "" {
			m.cpSize[c.ID] = max(c.Size, int64(len(c.State)))
		} else {
			m.u.S3Puts++
			m.u.S3BytesWritten += c.Size
		}
	}
}

// closeSeg bills the current segment by its owner's kind: a Fargate task
// (a minute at least), a finalize or a step invocation.
func (m *meter) closeSeg() {
	cur := m.cur
	if cur == nil {
		return
	}
	d := max(cur.last.Sub(cur.start), time.Millisecond).Seconds()
	switch {
	case strings.HasPrefix(cur.owner, "fargate"):
		m.u.FargateTasks++
		m.taskSec += max(d, 60)
	case strings.Contains(cur.owner, "finalize"):
		m.finalizes++
		m.finalizeSec += d
	default:
		m.u.StepInvocations++
		m.stepSec += d
	}
	m.cur = nil
}

// event adds what writing ev, and what it stands for, costs.
func (m *meter) event(ev run.Event) {
	u := &m.u
	u.DynamoWRU += 2 * units(jsonSize(ev)+itemOverhead, wruBytes)
	switch ev.Type {
	case run.EventLeaseAcquired:
		m.closeSeg()
		var d struct{ Owner string }
		_ = json.Unmarshal(ev.Data, &d)
		m.cur = &segment{owner: d.Owner, start: ev.Time, last: ev.Time}
		// Acquiring the lease is a conditional update of the run row;
		// loading reads the run, the resume checkpoint and the plan.
		u.DynamoWRU += units(m.runSize, wruBytes)
		u.DynamoRRU += units(m.runSize, rruBytes) + units(m.latestCp+itemOverhead, rruBytes) + units(m.planBytes, rruBytes)
		if m.latestSpilled {
			u.S3Gets++
		}
	case run.EventCheckpointWritten:
		var d struct {
			CheckpointID string `json:"checkpoint_id"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		m.commits++
		m.latestCp, m.latestSpilled = m.cpSize[d.CheckpointID], m.spilled[d.CheckpointID]
		// The checkpoint item itself (its state inline, or a reference).
		u.DynamoWRU += 2 * units(m.latestCp+itemOverhead, wruBytes)
	case run.EventToolCompleted, run.EventToolFailed:
		// The plan item is written when planned and when it ends.
		n := jsonSize(ev) + itemOverhead
		m.planBytes += n
		u.DynamoWRU += 2 * 2 * units(n, wruBytes)
	case run.EventApprovalRequested:
		m.approvals++
	case run.EventApprovalGranted, run.EventApprovalDenied, run.EventInputReceived, run.EventCancelRequested:
		m.calls++
	}
	if m.cur != nil && !external[ev.Type] && ev.Time.After(m.cur.last) {
		m.cur.last = ev.Time
	}
}

// total adds what the walk of events does not see (run row rewrites, a
// finalize, API calls, artifacts) and turns the tally into Usage.
func (m *meter) total(rec Records, res Resources) Usage {
	u := m.u
	// Every commit rewrites the run row in its transaction.
	u.DynamoWRU += 2 * m.commits * units(m.runSize, wruBytes)
	terminal := rec.Run.Status.Terminal()
	finalizes, finalizeSec, calls := m.finalizes, m.finalizeSec, m.calls
	if terminal && finalizes == 0 {
		finalizes = 1
		finalizeSec = res.ShortCall.Seconds()
	}
	calls++ // the request that created the run
	for _, n := range rec.ArtifactBytes {
		u.S3Puts++
		u.S3BytesWritten += n
	}
	u.StepSeconds = m.stepSec
	u.StateTransitions = transInit + transStep*u.StepInvocations + transApproval*m.approvals + transTask*u.FargateTasks
	if terminal {
		u.StateTransitions += transFinal
	}
	u.LambdaInvocations = u.StepInvocations + m.approvals + finalizes + calls
	short := res.ShortCall.Seconds()
	u.LambdaGBSeconds = gb(res.StepMemoryMiB)*m.stepSec + gb(res.FinalizeMemoryMiB)*finalizeSec +
		gb(res.ApprovalMemoryMiB)*short*float64(m.approvals) + gb(res.APIMemoryMiB)*short*float64(calls)
	u.FargateSeconds = m.taskSec
	return u
}

func gb(mib int64) float64 { return float64(mib) / 1024 }

// units is DynamoDB's rounding: every started block of size counts.
func units(n, size int64) int64 {
	if n <= 0 {
		return 1
	}
	return (n + size - 1) / size
}

func jsonSize(v any) int64 {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return int64(len(b))
}
