package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/observe/cost"
)

func runsCommand() command {
	cmd := command{
		usage:   "[--status S] [--session ID] [--parent RUN_ID] [--limit N] [--page-token T] [--json]",
		summary: "list your runs, newest first",
		fields:  map[string]string{"status": "--status", "session_id": "--session", "parent": "--parent", "limit": "--limit", "page_token": "--page-token"},
	}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("runs")
		status := fs.String("status", "", "only runs in this status")
		session := fs.String("session", "", "only runs of this session")
		parent := fs.String("parent", "", "only the child runs that this run's sub-agent calls started")
		limit := fs.Int("limit", 20, "runs per page (1-1000)")
		page := fs.String("page-token", "", "the page to show (printed under the previous page)")
		asJSON := fs.Bool("json", false, "print JSON")
		if _, err := parseArgs(fs, args); err != nil {
			return err
		}
		if st := run.Status(*status); st != "" && !st.Valid() {
			return usagef("--status: unknown status %q (one of %v)", *status, run.Statuses())
		}
		if *limit < 1 || *limit > 1000 {
			return usagef("--limit must be between 1 and 1000")
		}
		cl, err := c.client()
		if err != nil {
			return err
		}
		list, err := cl.ListRuns(ctx, client.ListRunsOptions{Status: run.Status(*status), SessionID: *session, Parent: *parent, Limit: *limit, PageToken: *page})
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(c, list)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RUN\tSTATUS\tAGENT\tCREATED\tINPUT")
		for _, r := range list.Runs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.RunID, r.Status, termSafe(r.Agent), r.CreatedAt.Local().Format("2006-01-02 15:04"), termSafe(clip(oneLine(r.Input), 50)))
		}
		tw.Flush()
		if list.NextPageToken != "" {
			fmt.Fprintf(c.stdout, "more: %s runs --page-token %s\n", c.prog, list.NextPageToken)
		}
		return nil
	}
	return cmd
}

func showCommand() command {
	cmd := command{usage: "[--json] RUN_ID", summary: "show a run: status, output, counters, pending approvals"}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("show")
		asJSON := fs.Bool("json", false, "print JSON")
		pos, cl, err := c.connect(fs, args, "RUN_ID")
		if err != nil {
			return err
		}
		r, err := cl.GetRun(ctx, pos[0])
		if err != nil {
			return err
		}
		aps, err := cl.ListApprovals(ctx, r.RunID)
		if err != nil {
			return err
		}
		// The cost is an extra: a server without the endpoint (older) or
		// a failure to cost leaves it out of show.
		var costRep *cost.Report
		if rep, err := c.runCost(ctx, cl, r.RunID, ""); err == nil {
			costRep = &rep
		}
		ws := runWorkspace(ctx, cl, r.RunID)
		if *asJSON {
			return printJSON(c, struct {
				api.Run
				Approvals []api.Approval         `json:"approvals"`
				Cost      *cost.Report           `json:"cost,omitempty"`
				Workspace []api.WorkspaceVersion `json:"workspace,omitempty"`
			}{r, aps, costRep, ws})
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		// Every value may be a model's or a caller's (input, error,
		// agent, session): escaped, one line each.
		row := func(k, v string) {
			if v != "" {
				fmt.Fprintf(tw, "%s\t%s\n", k, termSafe(v))
			}
		}
		row("run", r.RunID)
		row("status", string(r.Status)+map[bool]string{true: " (cancel requested)"}[r.CancelRequested])
		row("agent", r.Agent+versionNote(r.AgentVersion))
		row("session", r.SessionID)
		row("input", clip(oneLine(r.Input), 200))
		row("input policy", string(r.InputPolicy))
		row("steps", fmt.Sprintf("%d of %d", r.Counters.Steps, r.Limits.MaxSteps))
		row("tool calls", fmt.Sprintf("%d of %d", r.Counters.ToolCallsUsed, r.Limits.MaxToolCalls))
		row("tokens", fmt.Sprintf("%d of %d", r.Counters.TokensUsed, r.Limits.MaxTokens))
		row("spend", fmt.Sprintf("$%.4f of $%.2f", float64(r.Counters.SpendUsedMicroUSD)/1e6, float64(r.Limits.MaxSpendMicroUSD)/1e6))
		if costRep != nil {
			where := "on AWS"
			if isLocal(cl.BaseURL()) {
				where = "if on AWS"
			}
			row("cost", fmt.Sprintf("$%.6f %s + $%.4f model (%s cost %s)", costRep.AWSUSD, where, costRep.TotalUSD-costRep.AWSUSD, c.prog, r.RunID))
		}
		row("events", fmt.Sprint(r.Counters.Events))
		row("checkpoint", r.CheckpointID)
		lineage(r, row)
		row("created", r.CreatedAt.Local().Format(time.RFC3339))
		row("updated", r.UpdatedAt.Local().Format(time.RFC3339))
		row("error", r.Error)
		if n := len(r.Undelivered); n > 0 {
			row("inputs", fmt.Sprintf("%d accepted input(s) never delivered: the run ended before reading them (%s)", n, strings.Join(r.Undelivered, ", ")))
		}
		tw.Flush()
		showWorkspace(c, r.RunID, ws)
		if r.Output != "" {
			fmt.Fprintf(c.stdout, "\n%s\n", termSafeText(r.Output))
		}
		showApprovals(c, r, aps)
		if r.Status == run.StatusNeedsHuman {
			// What the run waits on, and the command that settles it.
			if list, err := cl.Operations(ctx, r.RunID); err == nil {
				settleHints(c, list.Operations)
			}
		}
		showNotifications(ctx, c, cl, r.RunID)
		return nil
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

func eventsCommand() command {
	cmd := command{usage: "[-f] [--after N] [--json] RUN_ID", summary: "print a run's event log; -f follows it live",
		fields: map[string]string{"after": "--after"}}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("events")
		follow := fs.Bool("f", false, "follow: keep printing new events until the run ends")
		after := fs.Int64("after", 0, "start after this seq")
		asJSON := fs.Bool("json", false, "print one JSON event per line")
		pos, err := parseArgs(fs, args, "RUN_ID")
		if err != nil {
			return err
		}
		if *after < 0 {
			return usagef("--after must not be negative")
		}
		cl, err := c.client()
		if err != nil {
			return err
		}
		show := func(ev api.Event) error {
			if *asJSON {
				b, err := json.Marshal(ev)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(c.stdout, "%s\n", b)
				return err
			}
			line := fmt.Sprintf("%5d  %s  %-22s %s", ev.Seq, ev.Time.Local().Format("15:04:05.000"), ev.Type, summarize(ev))
			_, err := fmt.Fprintln(c.stdout, termSafe(line))
			return err
		}
		if *follow {
			_, err := cl.Follow(ctx, pos[0], *after, show)
			return err
		}
		cursor := *after
		for {
			page, err := cl.Events(ctx, pos[0], cursor, 1000)
			if err != nil {
				return err
			}
			for _, ev := range page.Events {
				if err := show(ev); err != nil {
					return err
				}
			}
			if len(page.Events) == 0 {
				return nil
			}
			cursor = page.NextAfter
		}
	}
	return cmd
}

func checkpointsCommand() command {
	cmd := command{usage: "[--json] RUN_ID", summary: "list a run's checkpoints (to fork from)"}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("checkpoints")
		asJSON := fs.Bool("json", false, "print JSON")
		pos, cl, err := c.connect(fs, args, "RUN_ID")
		if err != nil {
			return err
		}
		var all []api.Checkpoint
		for after := int64(0); ; {
			page, err := cl.ListCheckpoints(ctx, pos[0], after, 1000)
			if err != nil {
				return err
			}
			all = append(all, page.Checkpoints...)
			if len(page.Checkpoints) == 0 {
				break
			}
			after = page.NextAfter
		}
		if *asJSON {
			return printJSON(c, all)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CHECKPOINT\tSEQ\tSTEP\tSIZE\tCREATED")
		for _, cp := range all {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", cp.CheckpointID, cp.Seq, cp.Step, cp.Size, cp.CreatedAt.Local().Format(time.RFC3339))
		}
		return tw.Flush()
	}
	return cmd
}

func artifactsCommand() command {
	cmd := command{usage: "[--json] RUN_ID", summary: "list a run's artifacts"}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("artifacts")
		asJSON := fs.Bool("json", false, "print JSON")
		pos, cl, err := c.connect(fs, args, "RUN_ID")
		if err != nil {
			return err
		}
		arts, err := cl.ListArtifacts(ctx, pos[0])
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(c, arts)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CHECKPOINT\tNAME\tSIZE\tSHA256")
		for _, a := range arts {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", a.CheckpointID, a.Name, a.Size, a.SHA256)
		}
		return tw.Flush()
	}
	return cmd
}

func downloadCommand() command {
	cmd := command{usage: "[-o FILE] [--force] RUN_ID CHECKPOINT_ID NAME", summary: "download an artifact, checked against its sha256"}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("download")
		out := fs.String("o", "", "write to FILE, which must not exist (default, or -: stdout)")
		force := fs.Bool("force", false, "replace FILE if it exists (a symlink is replaced, never followed)")
		pos, cl, err := c.connect(fs, args, "RUN_ID", "CHECKPOINT_ID", "NAME")
		if err != nil {
			return err
		}
		b, sum, err := cl.Download(ctx, pos[0], pos[1], pos[2])
		if err != nil {
			return err
		}
		if *out == "" || *out == "-" {
			_, err = c.stdout.Write(b)
			return err
		}
		if err := writeNew(*out, b, *force); err != nil {
			return err
		}
		fmt.Fprintf(c.stderr, "wrote %s (%d bytes, sha256 %s)\n", *out, len(b), sum)
		return nil
	}
	return cmd
}

// writeNew writes b to a file that does not exist yet (O_EXCL: not a
// symlink either, dangling or not). With force it writes a temporary file
// beside path and renames it over path, which replaces a symlink instead
// of writing through it.
func writeNew(path string, b []byte, force bool) error {
	if !force {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			return usagef("-o %s: the file exists; nothing was written (--force replaces it)", path)
		}
		if err != nil {
			return fmt.Errorf("-o: %w", err)
		}
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
			return fmt.Errorf("-o: %w", err)
		}
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".keel-download-*")
	if err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("-o: %w", err)
	}
	return nil
}

// versionNote is the agent version a run was created under, as show
// prints it beside the agent's name.
func versionNote(v string) string {
	if len(v) < 12 {
		return ""
	}
	return " (version " + v[:12] + ")"
}

// lineage prints where a run came from: the run it was forked from, the
// sub-agent call that started it.
func lineage(r api.Run, row func(k, v string)) {
	if r.ParentRunID != "" {
		row("forked from", r.ParentRunID+" at "+r.ForkCheckpointID)
	}
	if c := r.Caller; c != nil {
		row("child of", fmt.Sprintf("%s (operation %s, depth %d)", c.RunID, c.OperationID, c.Depth))
	}
}
