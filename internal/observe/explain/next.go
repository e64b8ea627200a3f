package explain

import (
	"fmt"
	"slices"
	"strings"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/observe/telemetry"
)

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
		settling := slices.ContainsFunc(s.Open, func(o Open) bool { return o.Kind == "operation" && strings.HasPrefix(o.Why, "needs a person") })
		if blk, ok := upgradeBlock(b); ok && !settling {
			// No fork: one from its checkpoint holds the same calls, and
			// the running version's check would stop it the same way.
			out = append(out,
				Action{Why: fmt.Sprintf("finish it under agent version %s, which wrote its records: start that build again (keel dev) or deploy it, then ask it", short(blk.From)),
					Command: fmt.Sprintf("keel resolve %s --old-version --reason …", r.ID)},
				Action{Why: fmt.Sprintf("or deny the calls it waits to make and go on under version %s: the model is told your reason and may ask again under the new schema", short(blk.To)),
					Command: fmt.Sprintf("keel resolve %s --deny --reason …", r.ID)},
				Action{Why: "or stop it", Command: fmt.Sprintf("keel cancel %s", r.ID)})
			break
		}
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

// upgradeBlock is the version check's stop that left the run needs_human
// (its last agent_upgrade_blocked, not followed by a person's
// resolution), when that is why it waits.
func upgradeBlock(b telemetry.Bundle) (data, bool) {
	for i := len(b.Events) - 1; i >= 0; i-- {
		switch e := b.Events[i]; e.Type {
		case eventAgentUpgradeBlocked:
			return read(e), true
		case run.EventRunResolved, run.EventOpSettled:
			return data{}, false
		}
	}
	return data{}, false
}
