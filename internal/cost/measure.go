package cost

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/run"
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
	u := Usage{Tokens: rec.Run.Budget.TokensUsed, ModelSpendMicroUSD: rec.Run.Budget.SpendUsedMicroUSD}
	spilled := map[string]bool{}
	cpSize := map[string]int64{}
	for _, c := range rec.Checkpoints {
		spilled[c.ID] = c.StateRef != ""
		if c.StateRef == "" {
			cpSize[c.ID] = max(c.Size, int64(len(c.State)))
		} else {
			u.S3Puts++
			u.S3BytesWritten += c.Size
		}
	}
	runSize := jsonSize(rec.Run) + itemOverhead
	var (
		stepSec, taskSec, finalizeSec float64
		finalizes, approvals, calls   int64
		planBytes, latestCp           int64
		latestSpilled                 bool
		commits                       int64
	)
	type seg struct {
		owner       string
		start, last time.Time
	}
	var cur *seg
	closeSeg := func() {
		if cur == nil {
			return
		}
		d := max(cur.last.Sub(cur.start), time.Millisecond).Seconds()
		switch {
		case strings.HasPrefix(cur.owner, "fargate"):
			u.FargateTasks++
			taskSec += max(d, 60)
		case strings.Contains(cur.owner, "finalize"):
			finalizes++
			finalizeSec += d
		default:
			u.StepInvocations++
			stepSec += d
		}
		cur = nil
	}
	for _, ev := range rec.Events {
		u.DynamoWRU += 2 * units(jsonSize(ev)+itemOverhead, wruBytes)
		switch ev.Type {
		case run.EventLeaseAcquired:
			closeSeg()
			var d struct{ Owner string }
			_ = json.Unmarshal(ev.Data, &d)
			cur = &seg{owner: d.Owner, start: ev.Time, last: ev.Time}
			// Acquiring the lease is a conditional update of the run row;
			// loading reads the run, the resume checkpoint and the plan.
			u.DynamoWRU += units(runSize, wruBytes)
			u.DynamoRRU += units(runSize, rruBytes) + units(latestCp+itemOverhead, rruBytes) + units(planBytes, rruBytes)
			if latestSpilled {
				u.S3Gets++
			}
		case run.EventCheckpointWritten:
			var d struct {
				CheckpointID string `json:"checkpoint_id"`
			}
			_ = json.Unmarshal(ev.Data, &d)
			commits++
			latestCp, latestSpilled = cpSize[d.CheckpointID], spilled[d.CheckpointID]
			// The checkpoint item itself (its state inline, or a reference).
			u.DynamoWRU += 2 * units(latestCp+itemOverhead, wruBytes)
		case run.EventToolCompleted, run.EventToolFailed:
			// The plan item is written when planned and when it ends.
			n := jsonSize(ev) + itemOverhead
			planBytes += n
			u.DynamoWRU += 2 * 2 * units(n, wruBytes)
		case run.EventApprovalRequested:
			approvals++
		case run.EventApprovalGranted, run.EventApprovalDenied, run.EventInputReceived, run.EventCancelRequested:
			calls++
		}
		if cur != nil && !external[ev.Type] && ev.Time.After(cur.last) {
			cur.last = ev.Time
		}
	}
	closeSeg()
	// Every commit rewrites the run row in its transaction.
	u.DynamoWRU += 2 * commits * units(runSize, wruBytes)
	terminal := rec.Run.Status.Terminal()
	if terminal && finalizes == 0 {
		finalizes = 1
		finalizeSec = res.ShortCall.Seconds()
	}
	calls++ // the request that created the run
	for _, n := range rec.ArtifactBytes {
		u.S3Puts++
		u.S3BytesWritten += n
	}
	u.StepSeconds = stepSec
	u.StateTransitions = transInit + transStep*u.StepInvocations + transApproval*approvals + transTask*u.FargateTasks
	if terminal {
		u.StateTransitions += transFinal
	}
	u.LambdaInvocations = u.StepInvocations + approvals + finalizes + calls
	short := res.ShortCall.Seconds()
	u.LambdaGBSeconds = gb(res.StepMemoryMiB)*stepSec + gb(res.FinalizeMemoryMiB)*finalizeSec +
		gb(res.ApprovalMemoryMiB)*short*float64(approvals) + gb(res.APIMemoryMiB)*short*float64(calls)
	u.FargateSeconds = taskSec
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
