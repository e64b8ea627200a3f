package crash

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
)

// Observation is what the destination says of one operation, asked from
// outside the killed process: how many times it applied the operation id.
// By names how it was asked: "count" (the effect's count hook: exact),
// "lookup" (its Lookup: found 1, not found 0, so a second application
// under the same id is invisible), or "" (the destination cannot be asked).
type Observation struct {
	By         string `json:"by,omitempty"`
	Count      int    `json:"count"`
	ExternalID string `json:"external_id,omitempty"`
	Error      string `json:"error,omitempty"`
}

// EffectCounter observes a run's effects at their destination. It is
// called once per played run, after every program process has stopped,
// with the run's data directory (the --data-dir of its program processes,
// which they saw as KEEL_DATA_DIR) and the operations Keel recorded; it
// answers by operation id. The research suite reads its publication
// server's log instead (Evidence.Pubs).
type EffectCounter interface {
	Observe(ctx context.Context, agent, dataDir string, ops []run.Operation) (map[string]Observation, error)
}

// ProgramCounter asks the program itself: `PROG crashtest-observe AGENT`
// reads the operations on stdin and answers each through the effect's own
// count hook or Lookup — the user's code, in a process that is not the one
// killed, against the destination named by Env. It runs with
// KEEL_DATA_DIR set to the run's data directory, as the killed processes
// did, so a destination kept in files under it is the one they wrote.
type ProgramCounter struct {
	Program string
	Env     []string
}

var _ EffectCounter = ProgramCounter{}

// ObserveCommand is the program's hidden command ProgramCounter runs.
const ObserveCommand = "crashtest-observe"

// Observe implements EffectCounter.
func (p ProgramCounter) Observe(ctx context.Context, agent, dataDir string, ops []run.Operation) (map[string]Observation, error) {
	in, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, p.Program, ObserveCommand, agent)
	cmd.Env = append(append(cleanEnv(), p.Env...), "KEEL_DATA_DIR="+dataDir)
	cmd.Stdin = bytes.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %v: %s", p.Program, ObserveCommand, err, strings.TrimSpace(errb.String()))
	}
	var obs map[string]Observation
	if err := json.Unmarshal(out.Bytes(), &obs); err != nil {
		return nil, fmt.Errorf("%s %s: %w", p.Program, ObserveCommand, err)
	}
	return obs, nil
}

// EffectRow is one effect (a tool under the operation protocol) in one
// played scenario: what Keel recorded of it and what its destination holds.
type EffectRow struct {
	Effect     string `json:"effect"`
	Operations int    `json:"operations"`
	// Dispatches are the dispatch attempts Keel recorded (first sends and
	// redispatches after a crash, summed over the operations).
	Dispatches int64 `json:"dispatches"`
	// Recorded is the operations' final statuses.
	Recorded string `json:"recorded"`
	// Destination is how many times the destination applied them, as
	// observed By "count", "lookup" or "" (unobservable).
	Destination int    `json:"destination"`
	By          string `json:"by"`
	// NeedsHuman: Keel could not know and handed the operation to a
	// person — the destination's contract is too weak to be sure.
	NeedsHuman bool `json:"needs_human"`
	// Unverified: the destination could not be asked about one of its
	// operations that a duplicate could have hit (advice.go).
	Unverified bool     `json:"unverified,omitempty"`
	Problems   []string `json:"problems,omitempty"`
}

// effectRows groups a run's operations by effect.
func effectRows(ev Evidence) []EffectRow {
	byTool := map[string]*EffectRow{}
	var order []string
	for _, op := range ev.Ops {
		r := byTool[op.Tool]
		if r == nil {
			r = &EffectRow{Effect: op.Tool}
			byTool[op.Tool] = r
			order = append(order, op.Tool)
		}
		o := ev.Observed[op.ID]
		r.Operations++
		r.Dispatches += op.Attempts
		if !strings.Contains(r.Recorded, string(op.Status)) {
			r.Recorded = strings.TrimPrefix(r.Recorded+","+string(op.Status), ",")
		}
		r.Destination += o.Count
		r.By = o.By
		r.NeedsHuman = r.NeedsHuman || op.Status == run.OpNeedsHuman
		r.Unverified = r.Unverified || unverifiable(op, o) != ""
	}
	out := make([]EffectRow, 0, len(order))
	for _, t := range order {
		out = append(out, *byTool[t])
	}
	return out
}

// checkEffects holds each operation's recorded outcome to what its
// destination says:
//
//   - a count above 1 is a DUPLICATE (the operation id applied twice);
//   - succeeded requires the destination to hold it (count ≥ 1, and a
//     lookup's external id to be Keel's), failed requires it to hold
//     nothing, pending is never a final state; needs_human says Keel does
//     not know, so any count up to 1 is allowed;
//   - an operation the destination cannot be asked about (no Count hook,
//     no Lookup) and that Keel dispatched more than once, or whose Count
//     or Lookup failed, is unverified (advice.go): not a violation, not a
//     pass either;
//   - one operation per plan item, and, when Expect.OpsPerEffect is set
//     (the unkilled run's), as many operations per effect as it had: a
//     crash must not make the agent perform an effect again;
//   - approvals: one approval_granted per approved approval, none left
//     pending or lost by a completed run, and every mutating operation's
//     args hash approved.
func checkEffects(ev Evidence, x Expect, v *Verdict) {
	v.OpsTruth = true
	items := map[string]run.PlanItem{}
	for _, it := range ev.Items {
		items[it.ID] = it
	}
	notFound := adviceNotFound
	if x.Unkilled && inProcess(ev) {
		// Not the Lookup's key: the destination itself did not outlive
		// the program's process.
		notFound = func(effect, _ string) string { return adviceInProcess(effect) }
	}
	perItem := map[string]int{}
	perTool := map[string]int{}
	for _, op := range ev.Ops {
		perItem[op.PlanItemID]++
		perTool[op.Tool]++
		checkOperation(op, ev.Observed, notFound, v)
	}
	for item, n := range perItem {
		if n > 1 {
			v.fail("DUPLICATE: plan item %s (%s) has %d operations", item, items[item].Tool, n)
		}
	}
	if x.OpsPerEffect != nil && ev.Run.Status == run.StatusCompleted {
		for t, want := range x.OpsPerEffect {
			if perTool[t] != want {
				v.fail("%s: %d operations, the unkilled run had %d", t, perTool[t], want)
			}
		}
		for t, n := range perTool {
			if _, ok := x.OpsPerEffect[t]; !ok {
				v.fail("%s: %d operations, the unkilled run had none", t, n)
			}
		}
	}

	checkEffectApprovals(ev, items, v)
	if ev.Run.Status == run.StatusCompleted && x.NoEffect && v.Publications != 0 {
		v.fail("the destination holds %d effects, want none", v.Publications)
	}
}

// inProcess reports whether the destination answered not-found for every
// operation Keel recorded as succeeded, and there was at least one: in a
// run nobody killed, the sign of a destination that lived in the memory
// of the program's process (crashtest asks it from another process).
func inProcess(ev Evidence) bool {
	n := 0
	for _, op := range ev.Ops {
		o := ev.Observed[op.ID]
		if op.Status != run.OpSucceeded || o.By == "" || o.Error != "" {
			continue
		}
		if o.Count != 0 {
			return false
		}
		n++
	}
	return n > 0
}

// checkEffectApprovals: one approval_granted per approved approval, none
// left pending by a completed run, and every mutating operation's args
// hash approved.
func checkEffectApprovals(ev Evidence, items map[string]run.PlanItem, v *Verdict) {
	granted := countType(ev.Events, run.EventApprovalGranted)
	approved := 0
	for _, a := range ev.Approvals {
		switch a.Status {
		case run.ApprovalApproved:
			approved++
		case run.ApprovalPending:
			if ev.Run.Status == run.StatusCompleted {
				v.fail("LOST APPROVAL: approval %s (%s) still pending in a completed run", a.ApprovalID, a.Tool)
			}
		}
	}
	if granted != approved {
		v.fail("LOST APPROVAL: %d approval_granted events for %d approved approvals", granted, approved)
	}
	for _, op := range ev.Ops {
		if items[op.PlanItemID].Mode != run.ModeMutating {
			continue
		}
		ok := slices.ContainsFunc(ev.Approvals, func(a api.Approval) bool {
			return a.Status == run.ApprovalApproved && a.ArgsHash == op.ArgsHash
		})
		if !ok {
			v.fail("operation %s (%s) dispatched args %s that no approved approval covers", op.ID, op.Tool, op.ArgsHash)
		}
	}
}

// checkOperation holds one operation's recorded outcome to its
// destination's observation; notFound is the advice for a succeeded
// operation the destination does not hold.
func checkOperation(op run.Operation, observed map[string]Observation, notFound func(effect, by string) string, v *Verdict) {
	o, ok := observed[op.ID]
	if !ok {
		v.fail("operation %s (%s): no observation from the destination", op.ID, op.Tool)
		v.advise(adviceKeel)
		return
	}
	if why := unverifiable(op, o); why != "" {
		advice := adviceCannotAsk(op.Tool)
		if o.Error != "" {
			advice = adviceAskFailed(op.Tool, o.By)
		}
		v.unverified(op, why, advice)
		return
	}
	v.Publications += o.Count
	if o.Count > 1 {
		v.Duplicates += o.Count - 1
		v.OpsTruth = false
		v.fail("DUPLICATE: %s operation %s applied %d times at the destination (%d dispatches recorded)", op.Tool, op.ID, o.Count, op.Attempts)
		v.advise(adviceDuplicate(op.Tool))
	}
	if o.By == "" {
		// Dispatched at most once, or handed to a person: nothing a
		// count could contradict, except a pending operation.
		if op.Status == run.OpPending {
			v.fail("operation %s (%s) left pending", op.ID, op.Tool)
		}
		return
	}
	switch op.Status {
	case run.OpSucceeded:
		if o.Count == 0 {
			v.OpsTruth = false
			v.fail("operation %s (%s) is recorded succeeded but the destination does not hold it", op.ID, op.Tool)
			v.advise(notFound(op.Tool, o.By))
		} else if o.ExternalID != "" && op.ExternalID != o.ExternalID {
			v.OpsTruth = false
			v.fail("operation %s (%s) records external id %s, the destination says %s", op.ID, op.Tool, op.ExternalID, o.ExternalID)
			v.advise(adviceNotFound(op.Tool, o.By))
		}
	case run.OpFailed:
		if o.Count != 0 {
			v.OpsTruth = false
			v.fail("operation %s (%s) is recorded failed but the destination applied it %d times", op.ID, op.Tool, o.Count)
			v.advise(adviceRejected(op.Tool))
		}
	case run.OpNeedsHuman:
	default:
		v.OpsTruth = false
		v.fail("operation %s (%s) left %s", op.ID, op.Tool, op.Status)
	}
}
