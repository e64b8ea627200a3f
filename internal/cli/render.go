package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
)

// eventData holds the fields of an event's data that the progress view
// understands, as internal/kernel/harness writes them: tool; done, total and note
// (tool progress); approval_id, args_hash and args (approval requested);
// destination, external_id and how (operations); error; by. order and of
// (a plan position) are shown when present.
type eventData struct {
	Tool        string          `json:"tool"`
	Order       int64           `json:"order"`
	Of          int64           `json:"of"`
	Done        *int64          `json:"done"`
	Total       int64           `json:"total"`
	Message     string          `json:"message"`
	Note        string          `json:"note"`
	ExternalID  string          `json:"external_id"`
	How         string          `json:"how"`
	Args        json.RawMessage `json:"args"`
	Error       string          `json:"error"`
	ApprovalID  string          `json:"approval_id"`
	ArgsHash    string          `json:"args_hash"`
	Tokens      int64           `json:"tokens"`
	Destination string          `json:"destination"`
	By          string          `json:"by"`
}

func parseData(ev api.Event) eventData {
	var d eventData
	if len(ev.Data) > 0 {
		_ = json.Unmarshal(ev.Data, &d) // data of another shape shows without details
	}
	if d.Message == "" {
		d.Message = d.Note
	}
	// The data is a tool's, a model's or a destination's: the fields
	// shown as they are get every control escaped, a newline included
	// (a tool named "x\n■ completed" must not print a line of its own).
	// Message, Error and Args are shown through oneLine, and every line
	// printed goes through termSafe or termSafeText as a whole.
	for _, f := range []*string{&d.Tool, &d.ExternalID, &d.How, &d.ApprovalID, &d.ArgsHash, &d.Destination, &d.By} {
		*f = termSafe(*f)
	}
	return d
}

// summarize is the one-line detail of an event for `keel events`.
func summarize(ev api.Event) string {
	d := parseData(ev)
	var parts []string
	if d.Tool != "" {
		parts = append(parts, d.Tool)
	}
	if d.Order > 0 {
		if d.Of > 0 {
			parts = append(parts, fmt.Sprintf("[%d/%d]", d.Order, d.Of))
		} else {
			parts = append(parts, fmt.Sprintf("[%d]", d.Order))
		}
	}
	if d.Done != nil {
		if d.Total > 0 {
			parts = append(parts, fmt.Sprintf("%d/%d", *d.Done, d.Total))
		} else {
			parts = append(parts, fmt.Sprint(*d.Done))
		}
	}
	if d.ApprovalID != "" {
		parts = append(parts, "approval "+d.ApprovalID)
	}
	if d.ArgsHash != "" {
		parts = append(parts, "args_hash "+d.ArgsHash)
	}
	if d.Destination != "" {
		parts = append(parts, "→ "+d.Destination)
	}
	if ev.OperationID != "" {
		parts = append(parts, "op "+ev.OperationID)
	}
	if d.ExternalID != "" {
		parts = append(parts, "external id "+d.ExternalID)
	}
	if d.How != "" && d.How != "dispatched" {
		parts = append(parts, "("+d.How+")")
	}
	if d.Message != "" {
		parts = append(parts, clip(oneLine(d.Message), 120))
	}
	if d.Error != "" {
		parts = append(parts, "error: "+clip(oneLine(d.Error), 200))
	}
	if d.By != "" {
		parts = append(parts, "by "+d.By)
	}
	return strings.Join(parts, " ")
}

// renderer turns a run's events into the live progress of `keel run
// --watch`: the current plan item and tool, tool progress, approvals
// waiting (with the command to answer them), effects and the end.
type renderer struct {
	w     io.Writer
	runID string
	// prog and viewer name where to answer an approval: the program's
	// approve command, and the run viewer's URL.
	prog, viewer string
	// items remembers the tool and plan position of each plan item, for
	// events that carry only the plan item id.
	items map[string]eventData
}

func newRenderer(w io.Writer, prog, viewer, runID string) *renderer {
	return &renderer{w: w, prog: prog, viewer: viewer, runID: runID, items: map[string]eventData{}}
}

func (r *renderer) event(ev api.Event) {
	line, ok := r.line(ev, r.withItem(ev, parseData(ev)))
	if !ok {
		return // bookkeeping: in `keel events`, not in the progress view
	}
	// The newlines are the renderer's own (every field is one line):
	// the rest of the line is escaped.
	fmt.Fprintln(r.w, termSafeText(line))
}

// withItem completes d with what earlier events told of its plan item
// (tool, position), and remembers what d tells: only some events name them.
func (r *renderer) withItem(ev api.Event, d eventData) eventData {
	if ev.PlanItemID == "" {
		return d
	}
	known := r.items[ev.PlanItemID]
	if d.Tool != "" {
		known.Tool = d.Tool
	}
	if d.Order > 0 {
		known.Order, known.Of = d.Order, d.Of
	}
	r.items[ev.PlanItemID] = known
	if d.Tool == "" {
		d.Tool = known.Tool
	}
	if d.Order == 0 {
		d.Order, d.Of = known.Order, known.Of
	}
	return d
}

// position is a plan item's "[order/of] " prefix, "" when unknown.
func position(d eventData) string {
	if d.Order > 0 && d.Of > 0 {
		return fmt.Sprintf("[%d/%d] ", d.Order, d.Of)
	} else if d.Order > 0 {
		return fmt.Sprintf("[%d] ", d.Order)
	}
	return ""
}

// line is the progress view's line for ev, false for bookkeeping events
// it leaves out.
func (r *renderer) line(ev api.Event, d eventData) (string, bool) {
	tool := d.Tool
	pos := position(d)
	line := ""
	switch ev.Type {
	case run.EventTurnStarted:
		line = "· turn started"
	case run.EventModelCallStarted:
		line = "· thinking…"
	case run.EventModelCallFailed:
		line = "· model call failed, retrying: " + clip(oneLine(d.Error), 160)
	case run.EventToolStarted:
		line = "▶ " + pos + tool
	case run.EventToolProgress:
		line = progressLine(ev, d)
	case run.EventToolCompleted:
		line = "✓ " + pos + tool
	case run.EventToolFailed:
		line = "✗ " + pos + tool + ": " + clip(oneLine(d.Error+d.Message), 200)
	case run.EventApprovalRequested:
		line = r.approvalLines(d)
	case run.EventApprovalGranted:
		line = "✓ approved" + by(d)
	case run.EventApprovalDenied:
		line = "✗ denied" + by(d)
	case run.EventApprovalCancelled:
		line = "· approval withdrawn" + by(d)
	case run.EventOpIntent:
		line = "  effect intended: " + summarize(ev)
	case run.EventOpSucceeded:
		line = "  effect recorded: " + summarize(ev)
	case run.EventOpReconciled:
		line = "  effect reconciled after a restart: " + summarize(ev)
	case run.EventOpNeedsHuman:
		line = "! effect uncertain, needs a person: " + summarize(ev)
	case run.EventLeaseAcquired, run.EventCheckpointWritten, run.EventBudgetReserved, run.EventModelCallCompleted, run.EventRunCreated:
		return "", false // bookkeeping: in `keel events`, not in the progress view
	case run.EventCancelRequested:
		line = "· cancel requested" + by(d)
	case run.EventRateLimited:
		line = "· rate limited, waiting"
	case run.EventRunSpilled:
		line = "· moved to a long-running worker"
	case run.EventBudgetExceeded:
		line = "! budget exceeded: " + summarize(ev)
	case run.EventRunCompleted, run.EventRunFailed, run.EventRunCancelled, run.EventRunNeedsHuman:
		line = "■ " + strings.TrimPrefix(string(ev.Type), "run_")
		if s := summarize(ev); s != "" {
			line += ": " + s
		}
	default:
		line = "· " + termSafe(string(ev.Type))
		if s := summarize(ev); s != "" {
			line += " " + s
		}
	}
	return line, true
}

// progressLine shows a tool's progress as a bar when it counts, else its
// summary.
func progressLine(ev api.Event, d eventData) string {
	line := ""
	if d.Done != nil && d.Total > 0 {
		line = fmt.Sprintf("  %s %d/%d %s", d.Tool, *d.Done, d.Total, bar(*d.Done, d.Total))
	} else {
		line = "  " + d.Tool + " " + summarize(ev)
	}
	if d.Message != "" && d.Done != nil {
		line += " " + clip(oneLine(d.Message), 80)
	}
	return line
}

// approvalLines show the action awaiting approval and how to answer it;
// a pause at a limit is answered with raise, not approve.
func (r *renderer) approvalLines(d eventData) string {
	if d.Tool == harness.RaiseLimitTool {
		line := fmt.Sprintf("⏸ paused at a limit, %s: %s\n  answer with: %s   (or: %s)", d.ApprovalID, raiseText(d.Args),
			raiseCmd(r.prog, r.runID), stopCmd(r.prog, r.runID))
		if r.viewer != "" {
			line += "\n  or in the run viewer: " + r.viewer
		}
		return line
	}
	line := fmt.Sprintf("⏸ waiting for approval %s: %s, args_hash %s", d.ApprovalID, d.Tool, d.ArgsHash)
	if len(d.Args) > 0 {
		line += "\n  args " + clip(oneLine(string(d.Args)), 300)
	}
	line += fmt.Sprintf("\n  answer with: %s approve %s %s   (or: %s deny …)", r.prog, r.runID, d.ApprovalID, r.prog)
	if r.viewer != "" {
		line += "\n  or in the run viewer: " + r.viewer
	}
	return line
}

// raiseText names the raise a pause asks for: "max_spend: 10000 → 30000".
func raiseText(args json.RawMessage) string {
	var a harness.RaiseArgs
	if json.Unmarshal(args, &a) != nil || a.Limit == "" {
		return "raise its limit"
	}
	return fmt.Sprintf("%s: %d → %d", termSafe(a.Limit), a.Now, a.After)
}

// raiseCmd and stopCmd answer a run paused at a limit.
func raiseCmd(prog, runID string) string { return fmt.Sprintf("%s raise %s", prog, runID) }
func stopCmd(prog, runID string) string {
	return fmt.Sprintf("%s raise %s --stop --reason …", prog, runID)
}

func by(d eventData) string {
	if d.By == "" {
		return ""
	}
	return " by " + d.By
}

// bar is a 20-cell progress bar.
func bar(done, total int64) string {
	if total <= 0 {
		return ""
	}
	n := max(min(int(done*20/total), 20), 0)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", 20-n) + "]"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func indentJSON(b []byte) string {
	var out bytes.Buffer
	if json.Indent(&out, b, "  ", "  ") != nil {
		return "  " + string(b)
	}
	return "  " + out.String()
}
