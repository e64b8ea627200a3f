package explain

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/observe/telemetry"
)

// data is the union of the event payload fields the story reads.
type data struct {
	Tool        string          `json:"tool"`
	Error       string          `json:"error"`
	Reason      string          `json:"reason"`
	Limit       string          `json:"limit"`
	Value       json.RawMessage `json:"value"`
	By          string          `json:"by"`
	DecidedBy   string          `json:"decided_by"`
	ApprovalID  string          `json:"approval_id"`
	Mode        string          `json:"mode"`
	Retried     bool            `json:"retried"`
	RetryAfter  float64         `json:"retry_after_seconds"`
	DurableWait bool            `json:"durable_wait"`
	Next        string          `json:"next"`
	From        string          `json:"from"`
	To          string          `json:"to"`
	Changes     []string        `json:"changes"`
	Problems    []string        `json:"problems"`
	ChildRunID  string          `json:"child_run_id"`
	Agent       string          `json:"agent"`
	Owner       string          `json:"owner"`
	Token       int64           `json:"token"`
	Status      string          `json:"status"`
	How         string          `json:"how"`
	Outcome     string          `json:"outcome"`
	Attempt     int64           `json:"attempt"`
	Contract    string          `json:"contract"`
	Answer      struct {
		Text  string `json:"text"`
		Calls []struct {
			Name string `json:"name"`
		} `json:"calls"`
	} `json:"answer"`
}

func read(e run.Event) data {
	var d data
	if len(e.Data) > 0 {
		_ = json.Unmarshal(e.Data, &d) // another shape reads as empty fields
	}
	return d
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// decisionOf names what an event decided, "" for bookkeeping.
func decisionOf(e run.Event) string {
	d := read(e)
	switch e.Type {
	case run.EventModelCallCompleted:
		if len(d.Answer.Calls) == 0 {
			return "the model answered (end of turn)"
		}
		names := make([]string, len(d.Answer.Calls))
		for i, c := range d.Answer.Calls {
			names[i] = c.Name
		}
		return "the model asked for " + strings.Join(names, ", ")
	case run.EventToolFailed:
		return fmt.Sprintf("%s failed: %s", d.Tool, clip(d.Error, 120))
	case run.EventApprovalRequested:
		return fmt.Sprintf("asked a person to approve %s (%s)", d.Tool, d.Mode)
	case run.EventApprovalGranted:
		return "approved by " + d.DecidedBy
	case run.EventApprovalDenied:
		return "denied by " + d.DecidedBy
	case run.EventApprovalCancelled:
		return "approval withdrawn (" + d.By + ")"
	case run.EventRateLimited:
		if d.Retried {
			return ""
		}
		return fmt.Sprintf("rate limited: durable wait of %.0fs", d.RetryAfter)
	case run.EventModelCallFailed:
		if d.Retried {
			return ""
		}
		return "model call failed: " + clip(d.Error, 120)
	case run.EventBudgetExceeded:
		return fmt.Sprintf("budget exceeded: %s (%s)", d.Limit, strings.Trim(string(d.Value), `"`))
	case run.EventBudgetPaused, run.EventBudgetRaised:
		return budgetDecision(e)
	case run.EventOpUncertain:
		return "effect outcome unknown, " + d.Next + ": " + clip(d.Error, 100)
	case run.EventOpReconciled:
		return "effect found at its destination after a restart"
	case run.EventOpNeedsHuman:
		return "effect needs a person: " + clip(d.Reason, 160)
	case run.EventOpSettled:
		return fmt.Sprintf("%s settled operation %s as %s: %s", orSomeone(d.By), e.OperationID, settledAs(d.Outcome), clip(d.Reason, 160))
	case run.EventOpIntent:
		if d.Attempt > 1 {
			// Only a settlement as not happened records an intent again.
			return fmt.Sprintf("dispatched operation %s again (attempt %d, same operation id)", e.OperationID, d.Attempt)
		}
		return ""
	case run.EventCancelRequested:
		return "cancel requested by " + d.By
	case run.EventRunSpilled:
		return "moved to the long-running worker for " + d.Tool
	case run.EventInputReceived:
		return "new input received"
	case run.EventChildStarted:
		if d.How == "found" {
			return "child run " + d.ChildRunID + " of sub-agent " + d.Agent + " found after a restart"
		}
		return "started child run " + d.ChildRunID + " of sub-agent " + d.Agent
	case run.EventChildEnded:
		s := "child run " + d.ChildRunID + " (" + d.Agent + ") ended " + d.Status
		if d.Error != "" {
			s += ": " + clip(d.Error, 120)
		}
		return s
	case run.EventRunCompleted, run.EventRunFailed, run.EventRunCancelled, run.EventRunNeedsHuman:
		return "run " + strings.TrimPrefix(string(e.Type), "run_")
	case eventAgentUpgraded:
		return fmt.Sprintf("moved from agent version %s to %s (%s)", short(d.From), short(d.To), clip(orNone(d.Changes), 160))
	case eventAgentUpgradeBlocked:
		return fmt.Sprintf("not moved from agent version %s to %s: %s", short(d.From), short(d.To), clip(strings.Join(d.Problems, "; "), 240))
	}
	return ""
}

// path is the run's decisions in the order they happened. The log is in
// commit order: an event another writer appended (a cancel, a decision)
// while a Step ran comes before that Step's own events in seq, so the
// path is ordered by event time. A decision repeated at once, or a pair
// repeated (asked for a tool, the tool failed), is folded.
func path(b telemetry.Bundle) []Decision {
	lost := lostSteps(b.Events)
	evs := slices.Clone(b.Events)
	slices.SortStableFunc(evs, func(x, y run.Event) int { return x.Time.Compare(y.Time) })
	out := []Decision{}
	for _, e := range evs {
		what := decisionOf(e)
		if n := lost[e.Seq]; n > 0 {
			what = lostText(n, read(e).Owner)
		}
		if what == "" {
			continue
		}
		n := len(out)
		if n > 0 && out[n-1].What == what && out[n-1].Times >= 1 {
			out[n-1].Times++
			continue
		}
		out = append(out, Decision{Seq: e.Seq, What: what, Times: 1})
		n++
		if n >= 4 && out[n-1].What == out[n-3].What && out[n-2].What == out[n-4].What && out[n-3].Times == out[n-4].Times {
			out[n-4].Times++
			out[n-3].Times++
			out = out[:n-2]
		}
	}
	return out
}

// lostSteps finds the worker invocations that took the run's lease and
// committed nothing — killed or crashed mid-step (in the middle of a
// model call or a command), or whose one write failed — and so left no
// event of their own: each lease_acquired bumps the fencing token by one,
// so a lease_acquired whose token is more than one past the previous one
// (or than 0) comes after that many lost invocations. It maps the
// lease_acquired's seq to their count.
func lostSteps(evs []run.Event) map[int64]int64 {
	lost := map[int64]int64{}
	var prev int64
	for _, e := range evs {
		if e.Type != run.EventLeaseAcquired {
			continue
		}
		tok := read(e).Token
		if tok > prev+1 {
			lost[e.Seq] = tok - prev - 1
		}
		if tok > prev {
			prev = tok
		}
	}
	return lost
}

// lostText tells lost invocations, and the worker that went on.
func lostText(n int64, owner string) string {
	who := "a worker"
	if n > 1 {
		who = fmt.Sprintf("%d workers", n)
	}
	next := "the next worker"
	if owner != "" {
		next = "the next worker (" + owner + ")"
	}
	return fmt.Sprintf("%s stopped mid-step without recording anything (killed or crashed, in the middle of a model call or a command, or its write failed); "+
		"%s started again from the last checkpoint: what was not recorded was done again, the workspace restored first", who, next)
}

// firstError is the error that explains the run best: a panic (a tool's,
// recovered, or one that escaped the worker) ranks first even when an
// ordinary tool error came earlier, because a panic is a defect in code
// and what the run did next followed from it; otherwise the earliest
// error.
func firstError(b telemetry.Bundle) *FirstError {
	first, firstAt := (*FirstError)(nil), 0
	for i, e := range b.Events {
		f := errorOf(b, e)
		if f == nil {
			continue
		}
		if run.TellsOfPanic(f.Message) {
			f.Panic = true
			first, firstAt = f, i
			break
		}
		if first == nil {
			first, firstAt = f, i
		}
	}
	if first == nil {
		return nil
	}
	first.Followed = []string{}
	for _, later := range path(telemetry.Bundle{Events: b.Events[firstAt+1:]}) {
		w := later.What
		if later.Times > 1 {
			w = fmt.Sprintf("%s (×%d)", w, later.Times)
		}
		first.Followed = append(first.Followed, w)
		if len(first.Followed) == 4 {
			break
		}
	}
	return first
}

// errorOf is the error an event records, nil for an event that records
// none.
func errorOf(b telemetry.Bundle, e run.Event) *FirstError {
	d := read(e)
	var f *FirstError
	switch e.Type {
	case run.EventToolFailed:
		f = &FirstError{Tool: d.Tool, Message: d.Error}
	case run.EventModelCallFailed:
		f = &FirstError{Message: d.Error}
	case run.EventOpFailed, run.EventOpUncertain:
		f = &FirstError{Tool: toolOf(b, e.PlanItemID), Message: d.Error}
	case run.EventOpNeedsHuman:
		f = &FirstError{Tool: toolOf(b, e.PlanItemID), Message: d.Reason}
	case run.EventBudgetExceeded:
		f = &FirstError{Message: fmt.Sprintf("%s (%s)", d.Limit, strings.Trim(string(d.Value), `"`))}
	case run.EventRunFailed:
		f = &FirstError{Message: d.Error}
	case eventAgentUpgradeBlocked:
		f = &FirstError{Message: fmt.Sprintf("agent version %s → %s: %s", short(d.From), short(d.To), strings.Join(d.Problems, "; "))}
	default:
		return nil
	}
	f.Seq, f.Kind = e.Seq, string(e.Type)
	return f
}

func toolOf(b telemetry.Bundle, planItem string) string {
	for _, it := range b.PlanItems {
		if it.ID == planItem {
			return it.Tool
		}
	}
	return ""
}

func open(b telemetry.Bundle, tl telemetry.Timeline) []Open {
	out := []Open{}
	reasons := map[string]string{}
	for _, op := range tl.Ops {
		reasons[op.OperationID] = op.Reason
	}
	for _, op := range b.Operations {
		switch op.Status {
		case run.OpNeedsHuman:
			out = append(out, Open{Kind: "operation", ID: op.ID, Tool: op.Tool, Why: fmt.Sprintf(
				"needs a person: %s (destination %s, idempotency key %s)", firstNonEmpty(reasons[op.ID], op.Error), op.Destination, op.IdempotencyKey)})
		case run.OpPending:
			why := fmt.Sprintf("pending: intent recorded, outcome not yet known at %s; reconciled before the run does anything else", op.Destination)
			if b.Run.Status.Terminal() {
				// Records of a Keel whose Finalize left it pending: an ended
				// run is never stepped, so nothing will reconcile it.
				why = fmt.Sprintf("needs a person: pending when the run ended, so nothing will reconcile it; it may or may not have happened (destination %s, idempotency key %s)",
					op.Destination, op.IdempotencyKey)
			}
			out = append(out, Open{Kind: "operation", ID: op.ID, Tool: op.Tool, Why: why})
		}
	}
	for _, ap := range b.Approvals {
		if ap.Status == run.ApprovalPending {
			why := fmt.Sprintf("waiting for a person to approve the exact %s call (%s, args_hash %s)", ap.Tool, ap.Mode, ap.ArgsHash)
			if ap.Tool == raiseLimitTool {
				why = "paused at a limit, waiting for a person to raise it or stop the run (" + raiseText(ap.Args) + ")"
			}
			out = append(out, Open{Kind: "approval", ID: ap.ID, Tool: ap.Tool, Why: why})
		}
	}
	if !b.Run.Status.Terminal() && len(b.Events) > 0 {
		last := b.Events[len(b.Events)-1]
		if d := read(last); last.Type == run.EventRateLimited && d.DurableWait {
			out = append(out, Open{Kind: "wait", ID: fmt.Sprintf("seq %d", last.Seq),
				Why: fmt.Sprintf("rate limited by the model provider: a durable wait of %.0fs, then the run goes on by itself", d.RetryAfter)})
		}
	}
	return out
}

// contractOf is what the destination of operation id promised, as its
// last op_intent recorded it ("none", "idempotency_key", "lookup",
// "idempotency_key+lookup"), or "" when no intent says.
func contractOf(b telemetry.Bundle, id string) string {
	c := ""
	for _, e := range b.Events {
		if e.Type == run.EventOpIntent && e.OperationID == id {
			c = read(e).Contract
		}
	}
	return c
}

// settledAs names a settlement's outcome (store.SettleOutcome).
func settledAs(outcome string) string {
	switch outcome {
	case "not_happened":
		return "not happened"
	case "give_up":
		return "unknowable (gave up)"
	}
	return outcome
}

func orSomeone(by string) string {
	if by == "" {
		return "a person"
	}
	return by
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func next(b telemetry.Bundle, s Story) []Action {
	r := b.Run
	var out []Action
	waiting := false
	for _, o := range s.Open {
		switch o.Kind {
		case "approval":
			if o.Tool == raiseLimitTool {
				out = append(out, Action{Why: "the run paused at a limit: raise it by the amount its agent names, or stop the run",
					Command: fmt.Sprintf("keel raise %s   (or: keel raise %s --stop)", r.ID, r.ID)})
				continue
			}
			out = append(out, Action{Why: "decide the action the run waits on",
				Command: fmt.Sprintf("keel approve %s %s   (or: keel deny %s %s --reason …)", r.ID, o.ID, r.ID, o.ID)})
		case "operation":
			if strings.HasPrefix(o.Why, "needs a person") {
				ask := fmt.Sprintf("ask the destination whether operation %s happened (look it up by its idempotency key)", o.ID)
				if c := contractOf(b, o.ID); c != "" && !strings.Contains(c, "lookup") {
					ask = fmt.Sprintf("find out at the destination whether operation %s happened: its effect promises no lookup by operation id, so look for the action itself (%s with the arguments the run recorded)", o.ID, o.Tool)
				}
				out = append(out, Action{Why: ask + ", then record what you found: the run goes on and the model is told the truth",
					Command: fmt.Sprintf("keel settle %s %s --happened|--not-happened|--give-up --reason …", r.ID, o.ID)})
			}
		case "wait":
			waiting = true
		}
	}
	fork := fmt.Sprintf("keel fork %s", r.ID)
	if r.CheckpointID != "" {
		fork += " --checkpoint " + r.CheckpointID
	}
	switch r.Status {
	case run.StatusFailed:
		why := "after fixing the cause, continue from the last checkpoint (recorded tool results are reused, effects are not repeated)"
		if s.FirstErr != nil && s.FirstErr.Kind == string(run.EventBudgetExceeded) {
			why = "the budget stopped it: continue from the last checkpoint in a new run (with the limits of a new run)"
		}
		out = append(out, Action{Why: why, Command: fork})
	case run.StatusCancelled:
		out = append(out, Action{Why: "continue the cancelled work from its last checkpoint", Command: fork})
	case run.StatusNeedsHuman:
		out = append(out, Action{Why: "or give up on this run and continue from its last checkpoint in a new one (the uncertain operation stays uncertain there)", Command: fork})
	case run.StatusCompleted:
		out = append(out, Action{Why: "read what it produced", Command: fmt.Sprintf("keel artifacts %s", r.ID)})
	case run.StatusRunning, run.StatusCreated, run.StatusPlanned:
		why := "follow it live"
		if waiting {
			why = "nothing to do: the run resumes by itself after its wait; to watch it"
		}
		out = append(out, Action{Why: why, Command: fmt.Sprintf("keel events -f %s", r.ID)},
			Action{Why: "stop it (effects in flight are not undone)", Command: fmt.Sprintf("keel cancel %s", r.ID)})
	}
	out = append(out, Action{Why: "keep the whole record (events, checkpoints, trace, tool calls, environment)",
		Command: fmt.Sprintf("keel bundle %s -o %s.tar.gz", r.ID, r.ID)})
	return out
}

// The version check's events (package harness, version.go): named here
// too, since explain reads records and imports no harness.
const (
	eventAgentUpgraded       run.EventType = "agent_upgraded"
	eventAgentUpgradeBlocked run.EventType = "agent_upgrade_blocked"
)

func orNone(changes []string) string {
	if len(changes) == 0 {
		return "build only"
	}
	return strings.Join(changes, "; ")
}
