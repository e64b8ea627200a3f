package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/cost"
	"github.com/keelrun/keel/internal/run"
)

func printJSON(c *cli, v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// wantArgs checks that exactly the named positional arguments are present.
func wantArgs(pos []string, names ...string) error {
	if len(pos) < len(names) {
		return usagef("missing argument %s", names[len(pos)])
	}
	if len(pos) > len(names) {
		return usagef("unexpected argument %q", pos[len(names)])
	}
	for i, p := range pos {
		if strings.TrimSpace(p) == "" {
			return usagef("argument %s is empty", names[i])
		}
	}
	return nil
}

// parseArgs parses the flags and checks that exactly the named positional
// arguments are present.
func parseArgs(fs *flag.FlagSet, args []string, names ...string) ([]string, error) {
	pos, err := parse(fs, args)
	if err != nil {
		return nil, err
	}
	if err := wantArgs(pos, names...); err != nil {
		return nil, err
	}
	return pos, nil
}

// connect is parseArgs, then the API client: the opening of every command
// whose arguments are fixed and whose flags need no further check.
func (c *cli) connect(fs *flag.FlagSet, args []string, names ...string) ([]string, *client.Client, error) {
	pos, err := parseArgs(fs, args, names...)
	if err != nil {
		return nil, nil, err
	}
	cl, err := c.client()
	if err != nil {
		return nil, nil, err
	}
	return pos, cl, nil
}

func runCommand() command {
	cmd := command{
		usage:   "[--session ID] [--idempotency-key KEY] [--input-policy P] [--max-steps N] [--max-tool-calls N] [--max-tokens N] [--max-spend-usd X] [--deadline DURATION] [--watch] [--json] AGENT INPUT... (INPUT - reads stdin)",
		summary: "start a run of AGENT on INPUT; --watch follows its progress",
		fields: map[string]string{
			"agent": "AGENT", "input": "INPUT", "session_id": "--session", "Idempotency-Key": "--idempotency-key",
			"input_policy": "--input-policy", "limits.max_steps": "--max-steps", "limits.max_tool_calls": "--max-tool-calls",
			"limits.max_tokens": "--max-tokens", "limits.max_spend_micro_usd": "--max-spend-usd", "limits.deadline": "--deadline",
		},
	}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("run")
		session := fs.String("session", "", "add the run to this session (default: a new session)")
		key := fs.String("idempotency-key", "", "the same key returns the same run (default: a fresh key, so retries are safe)")
		policy := fs.String("input-policy", "", "input while active: reject, queue (default), interrupt or rollback")
		var lim api.LimitsRequest
		fs.Int64Var(&lim.MaxSteps, "max-steps", 0, "step limit (default 200)")
		fs.Int64Var(&lim.MaxToolCalls, "max-tool-calls", 0, "tool-call limit (default 500)")
		fs.Int64Var(&lim.MaxTokens, "max-tokens", 0, "token limit (default 2000000)")
		spend := fs.Float64("max-spend-usd", 0, "spend limit in USD (default 20)")
		deadline := fs.Duration("deadline", 0, "stop the run after this long, e.g. 30m")
		watch := fs.Bool("watch", false, "follow the run's progress until it ends")
		asJSON := fs.Bool("json", false, "print the run as JSON")
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if len(pos) == 0 {
			return usagef("missing argument AGENT")
		}
		if len(pos) == 1 {
			return usagef("missing argument INPUT")
		}
		input, err := c.readText(pos[1:])
		if err != nil {
			return err
		}
		if strings.TrimSpace(input) == "" {
			return usagef("argument INPUT is empty")
		}
		if *spend < 0 || math.IsNaN(*spend) || *spend > math.MaxInt64/1e6 {
			return usagef("--max-spend-usd must be a non-negative amount")
		}
		lim.MaxSpendMicroUSD = int64(math.Round(*spend * 1e6))
		if *deadline < 0 {
			return usagef("--deadline must be positive")
		}
		if *deadline > 0 {
			lim.Deadline = time.Now().Add(*deadline).UTC().Format(time.RFC3339)
		}
		if *key == "" {
			*key = run.NewID("cli")
		}
		cl, err := c.client()
		if err != nil {
			return err
		}
		req := api.CreateRunRequest{Agent: pos[0], Input: input, SessionID: *session, InputPolicy: run.InputPolicy(*policy)}
		if lim != (api.LimitsRequest{}) {
			req.Limits = &lim
		}
		r, created, err := cl.CreateRun(ctx, req, *key)
		if err != nil {
			return err
		}
		if !*asJSON {
			verb := "started"
			if !created {
				verb = "already exists (same idempotency key)"
			}
			fmt.Fprintf(c.stdout, "run %s %s: agent %s, session %s\n", r.RunID, verb, r.Agent, r.SessionID)
		}
		if *watch {
			return watchRun(ctx, c, cl, r.RunID, *asJSON)
		}
		if *asJSON {
			return printJSON(c, r)
		}
		return nil
	}
	return cmd
}

// watchRun follows a run to its end, rendering progress, then prints the
// outcome. A run that does not complete is a failure (exit 1).
func watchRun(ctx context.Context, c *cli, cl *client.Client, id string, asJSON bool) error {
	rd := newRenderer(c.stdout, id)
	if asJSON {
		rd = nil
	}
	_, err := cl.Follow(ctx, id, 0, func(ev api.Event) error {
		if rd != nil {
			rd.event(ev)
		}
		return nil
	})
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(c.stderr, "stopped watching; the run goes on: keel events -f %s\n", id)
		return err
	}
	if err != nil {
		return err
	}
	r, err := cl.GetRun(context.WithoutCancel(ctx), id)
	if err != nil {
		return err
	}
	if asJSON {
		if err := printJSON(c, r); err != nil {
			return err
		}
	} else {
		printOutcome(c, r)
	}
	if r.Status != run.StatusCompleted {
		return &declinedError{fmt.Sprintf("run %s ended %s", r.RunID, r.Status)}
	}
	return nil
}

func printOutcome(c *cli, r api.Run) {
	fmt.Fprintf(c.stdout, "\nrun %s %s after %d steps, %d tool calls, %d tokens\n", r.RunID, r.Status,
		r.Counters.Steps, r.Counters.ToolCallsUsed, r.Counters.TokensUsed)
	if r.Output != "" {
		fmt.Fprintf(c.stdout, "\n%s\n", r.Output)
	}
	if r.Error != "" {
		fmt.Fprintf(c.stdout, "error: %s\n", r.Error)
	}
}

func runsCommand() command {
	cmd := command{
		usage:   "[--status S] [--session ID] [--limit N] [--page-token T] [--json]",
		summary: "list your runs, newest first",
		fields:  map[string]string{"status": "--status", "session_id": "--session", "limit": "--limit", "page_token": "--page-token"},
	}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("runs")
		status := fs.String("status", "", "only runs in this status")
		session := fs.String("session", "", "only runs of this session")
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
		list, err := cl.ListRuns(ctx, client.ListRunsOptions{Status: run.Status(*status), SessionID: *session, Limit: *limit, PageToken: *page})
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(c, list)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RUN\tSTATUS\tAGENT\tCREATED\tINPUT")
		for _, r := range list.Runs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.RunID, r.Status, r.Agent, r.CreatedAt.Local().Format("2006-01-02 15:04"), clip(oneLine(r.Input), 50))
		}
		tw.Flush()
		if list.NextPageToken != "" {
			fmt.Fprintf(c.stdout, "more: keel runs --page-token %s\n", list.NextPageToken)
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
		if *asJSON {
			return printJSON(c, struct {
				api.Run
				Approvals []api.Approval `json:"approvals"`
				Cost      *cost.Report   `json:"cost,omitempty"`
			}{r, aps, costRep})
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		row := func(k, v string) {
			if v != "" {
				fmt.Fprintf(tw, "%s\t%s\n", k, v)
			}
		}
		row("run", r.RunID)
		row("status", string(r.Status)+map[bool]string{true: " (cancel requested)"}[r.CancelRequested])
		row("agent", r.Agent)
		row("session", r.SessionID)
		row("input", clip(oneLine(r.Input), 200))
		row("input policy", string(r.InputPolicy))
		row("steps", fmt.Sprintf("%d of %d", r.Counters.Steps, r.Limits.MaxSteps))
		row("tool calls", fmt.Sprintf("%d of %d", r.Counters.ToolCallsUsed, r.Limits.MaxToolCalls))
		row("tokens", fmt.Sprintf("%d of %d", r.Counters.TokensUsed, r.Limits.MaxTokens))
		row("spend", fmt.Sprintf("$%.4f of $%.2f", float64(r.Counters.SpendUsedMicroUSD)/1e6, float64(r.Limits.MaxSpendMicroUSD)/1e6))
		if costRep != nil {
			row("cost", fmt.Sprintf("$%.6f on AWS + $%.4f model (keel cost %s)", costRep.AWSUSD, costRep.TotalUSD-costRep.AWSUSD, r.RunID))
		}
		row("events", fmt.Sprint(r.Counters.Events))
		row("checkpoint", r.CheckpointID)
		if r.ParentRunID != "" {
			row("forked from", r.ParentRunID+" at "+r.ForkCheckpointID)
		}
		row("created", r.CreatedAt.Local().Format(time.RFC3339))
		row("updated", r.UpdatedAt.Local().Format(time.RFC3339))
		row("error", r.Error)
		tw.Flush()
		if r.Output != "" {
			fmt.Fprintf(c.stdout, "\n%s\n", r.Output)
		}
		for _, a := range aps {
			// A finished run's approval cannot be decided (409
			// run_finished): never offer it, even if it is still pending.
			if a.Status == run.ApprovalPending && !r.Status.Terminal() {
				fmt.Fprintf(c.stdout, "\nwaiting for approval %s: %s %s\n  args_hash %s\n  keel approve %s %s   |   keel deny %s %s\n",
					a.ApprovalID, a.Tool, clip(string(a.Args), 200), a.ArgsHash, r.RunID, a.ApprovalID, r.RunID, a.ApprovalID)
			}
		}
		return nil
	}
	return cmd
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
			_, err := fmt.Fprintf(c.stdout, "%5d  %s  %-22s %s\n", ev.Seq, ev.Time.Local().Format("15:04:05.000"), ev.Type, summarize(ev))
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

// decideCommand is approve or deny: it fetches the approval, shows the
// exact action and its hash, asks, and sends the decision with that hash —
// so the server refuses it (409) if the action changed in between.
func decideCommand(decision string) command {
	verb := map[string]string{api.DecisionApprove: "approve", api.DecisionDeny: "deny"}[decision]
	cmd := command{
		usage:   "[--yes] [--reason TEXT] RUN_ID [APPROVAL_ID]",
		summary: verb + " the exact action a run waits on (shown with its args hash before asking)",
		fields:  map[string]string{"reason": "--reason", "args_hash": "the shown args_hash", "decision": verb},
	}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags(verb)
		yes := fs.Bool("yes", false, "do not ask (for scripts)")
		reason := fs.String("reason", "", "why, recorded with the decision")
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if len(pos) == 0 {
			return usagef("missing argument RUN_ID")
		}
		if len(pos) > 2 {
			return usagef("unexpected argument %q", pos[2])
		}
		cl, err := c.client()
		if err != nil {
			return err
		}
		var a api.Approval
		if len(pos) == 2 {
			if a, err = cl.GetApproval(ctx, pos[0], pos[1]); err != nil {
				return err
			}
		} else {
			aps, err := cl.ListApprovals(ctx, pos[0])
			if err != nil {
				return err
			}
			var pending []api.Approval
			for _, x := range aps {
				if x.Status == run.ApprovalPending {
					pending = append(pending, x)
				}
			}
			switch len(pending) {
			case 0:
				return &api.Error{Status: 409, Code: api.CodeApprovalNotPending, Message: "run " + pos[0] + " has no pending approval"}
			case 1:
				a = pending[0]
			default:
				ids := make([]string, len(pending))
				for i, p := range pending {
					ids[i] = p.ApprovalID + " (" + p.Tool + ")"
				}
				return usagef("run %s waits on %d approvals; name one as APPROVAL_ID: %s", pos[0], len(pending), strings.Join(ids, ", "))
			}
		}
		if a.Status != run.ApprovalPending {
			return &api.Error{Status: 409, Code: api.CodeApprovalNotPending, Message: fmt.Sprintf("approval %s is already %s", a.ApprovalID, a.Status)}
		}
		fmt.Fprintf(c.stdout, "run %s asks to call %s (%s) with:\n%s\nargs_hash %s\n", a.RunID, a.Tool, a.Mode, indentJSON(a.Args), a.ArgsHash)
		if !*yes {
			fmt.Fprintf(c.stdout, "%s this exact action? [y/N] ", strings.ToUpper(verb[:1])+verb[1:])
			ans, err := c.stdin.ReadString('\n')
			if err != nil && strings.TrimSpace(ans) == "" {
				return &declinedError{"no answer on stdin; nothing was sent (use --yes in scripts)"}
			}
			if a := strings.ToLower(strings.TrimSpace(ans)); a != "y" && a != "yes" {
				return &declinedError{"not confirmed; nothing was sent"}
			}
		}
		got, err := cl.Decide(ctx, a.RunID, a.ApprovalID, api.DecisionRequest{Decision: decision, ArgsHash: a.ArgsHash, Reason: *reason})
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "%s: approval %s of run %s is %s\n", verb, got.ApprovalID, got.RunID, got.Status)
		return nil
	}
	return cmd
}

func cancelCommand() command {
	cmd := command{usage: "RUN_ID", summary: "ask a run to stop (an effect in flight is not undone)"}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("cancel")
		pos, cl, err := c.connect(fs, args, "RUN_ID")
		if err != nil {
			return err
		}
		res, err := cl.Cancel(ctx, pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "cancel requested for run %s (status %s)", res.Run.RunID, res.Run.Status)
		if n := len(res.CancelledApprovals); n > 0 {
			fmt.Fprintf(c.stdout, "; %d pending approval(s) withdrawn", n)
		}
		fmt.Fprintln(c.stdout)
		return nil
	}
	return cmd
}

func inputCommand() command {
	cmd := command{usage: "RUN_ID TEXT... (TEXT - reads stdin)", summary: "send input to an active run, under its input policy",
		fields: map[string]string{"text": "TEXT"}}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("input")
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if len(pos) == 0 {
			return usagef("missing argument RUN_ID")
		}
		if len(pos) == 1 {
			return usagef("missing argument TEXT")
		}
		text, err := c.readText(pos[1:])
		if err != nil {
			return err
		}
		if strings.TrimSpace(text) == "" {
			return usagef("argument TEXT is empty")
		}
		cl, err := c.client()
		if err != nil {
			return err
		}
		res, err := cl.Input(ctx, pos[0], text)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "input %s accepted by run %s (policy %s)\n", res.InputID, res.RunID, res.Policy)
		return nil
	}
	return cmd
}

func forkCommand() command {
	cmd := command{
		usage:   "[--checkpoint ID] [--idempotency-key KEY] [--watch] [--json] RUN_ID",
		summary: "start a new run from one of RUN_ID's checkpoints (default: its current one)",
		fields:  map[string]string{"checkpoint_id": "--checkpoint", "Idempotency-Key": "--idempotency-key"},
	}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("fork")
		cp := fs.String("checkpoint", "", "the checkpoint to fork from (keel checkpoints RUN_ID lists them)")
		key := fs.String("idempotency-key", "", "the same key returns the same fork (default: a fresh key)")
		watch := fs.Bool("watch", false, "follow the new run until it ends")
		asJSON := fs.Bool("json", false, "print the new run as JSON")
		pos, cl, err := c.connect(fs, args, "RUN_ID")
		if err != nil {
			return err
		}
		if *cp == "" {
			r, err := cl.GetRun(ctx, pos[0])
			if err != nil {
				return err
			}
			if r.CheckpointID == "" {
				return usagef("--checkpoint is required: run %s has no current checkpoint", r.RunID)
			}
			*cp = r.CheckpointID
		}
		if *key == "" {
			*key = run.NewID("cli")
		}
		child, _, err := cl.Fork(ctx, pos[0], *cp, *key)
		if err != nil {
			return err
		}
		if !*asJSON {
			fmt.Fprintf(c.stdout, "run %s started from run %s at checkpoint %s\n", child.RunID, child.ParentRunID, child.ForkCheckpointID)
		}
		if *watch {
			return watchRun(ctx, c, cl, child.RunID, *asJSON)
		}
		if *asJSON {
			return printJSON(c, child)
		}
		return nil
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
