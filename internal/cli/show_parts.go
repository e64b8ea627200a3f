package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/observe/cost"
)

// The parts of `show` beyond its rows of the run itself.

// showJSON prints what show shows, as JSON.
func showJSON(c *cli, r api.Run, aps []api.Approval, costRep *cost.Report, ws []api.WorkspaceVersion) error {
	return printJSON(c, struct {
		api.Run
		Approvals []api.Approval         `json:"approvals"`
		Cost      *cost.Report           `json:"cost,omitempty"`
		Workspace []api.WorkspaceVersion `json:"workspace,omitempty"`
	}{r, aps, costRep, ws})
}

// costRow is the run's cost, when it could be worked out.
func costRow(c *cli, cl *client.Client, runID string, rep *cost.Report, row func(k, v string)) {
	if rep == nil {
		return
	}
	where := "on AWS"
	if isLocal(cl.BaseURL()) {
		where = "if on AWS"
	}
	row("cost", fmt.Sprintf("$%.6f %s + $%.4f model (%s cost %s)", rep.AWSUSD, where, rep.TotalUSD-rep.AWSUSD, c.prog, runID))
}

// nextRows are who moves the run next (the API's law of moves), in this
// program's name.
func nextRows(prog string, n *api.NextMove, row func(k, v string)) {
	if n == nil {
		return
	}
	row("next", n.Actor+": "+n.Why)
	row("  command", progCommand(prog, n.Command))
	for _, a := range n.Also {
		row("  or", progCommand(prog, a))
	}
}

// showSettle prints what a needs_human run waits on, and the command that
// settles it.
func showSettle(ctx context.Context, c *cli, cl *client.Client, r api.Run) {
	if r.Status != run.StatusNeedsHuman {
		return
	}
	if list, err := cl.Operations(ctx, r.RunID); err == nil {
		settleHints(c, list.Operations)
	}
}

// progCommand is an API command ("keel …") in this program's name.
func progCommand(prog, cmd string) string {
	if rest, ok := strings.CutPrefix(cmd, "keel "); ok {
		return prog + " " + rest
	}
	return cmd
}

// showApprovals prints the run's pending approvals with the commands that
// answer them.
func showApprovals(c *cli, r api.Run, aps []api.Approval) {
	for _, a := range aps {
		// A finished run's approval cannot be decided (409
		// run_finished): never offer it, even if it is still pending.
		if a.Status == run.ApprovalPending && !r.Status.Terminal() && a.Tool == harness.RaiseLimitTool {
			fmt.Fprintf(c.stdout, "\npaused at a limit (approval %s): %s\n  %s   |   %s\n",
				a.ApprovalID, raiseText(a.Args), raiseCmd(c.prog, r.RunID), stopCmd(c.prog, r.RunID))
			continue
		}
		if a.Status == run.ApprovalPending && !r.Status.Terminal() {
			fmt.Fprintf(c.stdout, "\nwaiting for approval %s: %s %s\n  args_hash %s\n  %[5]s approve %[6]s %[1]s   |   %[5]s deny %[6]s %[1]s\n",
				a.ApprovalID, termSafe(a.Tool), termSafe(clip(string(a.Args), 200)), a.ArgsHash, c.prog, r.RunID)
		}
	}
}

// showNotifications prints the run's notifications and how their delivery
// went; a server without the endpoint (older) prints nothing.
func showNotifications(ctx context.Context, c *cli, cl *client.Client, runID string) {
	ns, err := cl.Notifications(ctx, runID)
	if err != nil || len(ns) == 0 {
		return
	}
	fmt.Fprintln(c.stdout, "\nnotifications:")
	for _, n := range ns {
		line := fmt.Sprintf("  %s %s: %s after %d attempt(s)", n.ID, n.Kind, n.Status, n.Attempts)
		if len(n.Delivered) > 0 {
			line += " (delivered: " + strings.Join(n.Delivered, ", ") + ")"
		}
		if n.LastError != "" {
			line += "; last error: " + clip(oneLine(n.LastError), 200)
		}
		fmt.Fprintln(c.stdout, termSafe(line))
	}
}
