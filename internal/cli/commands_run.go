package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/kernel/run"
)

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
		if err := setSpendAndDeadline(&lim, *spend, *deadline); err != nil {
			return err
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

// setSpendAndDeadline puts the --max-spend-usd and --deadline flags into
// lim in the API's units: micro-USD, and an RFC 3339 time from now.
func setSpendAndDeadline(lim *api.LimitsRequest, spend float64, deadline time.Duration) error {
	if spend < 0 || math.IsNaN(spend) || spend > math.MaxInt64/1e6 {
		return usagef("--max-spend-usd must be a non-negative amount")
	}
	lim.MaxSpendMicroUSD = int64(math.Round(spend * 1e6))
	if deadline < 0 {
		return usagef("--deadline must be positive")
	}
	if deadline > 0 {
		lim.Deadline = time.Now().Add(deadline).UTC().Format(time.RFC3339)
	}
	return nil
}

// watchGiveUp is how long watchRun keeps reconnecting to a runtime that
// stopped answering (dev restarting, a laptop waking) before it stops and
// names the command that goes on from where it was.
const watchGiveUp = 5 * time.Minute

// watchRun follows a run to its end, rendering progress, then prints the
// outcome. A run that does not complete is a failure (exit 1). When the
// runtime stops answering (dev restarted) it says so and reconnects, from
// the last event it showed, finding the runtime again as the command did
// (.keel/url may name a new port); after watchGiveUp it stops and prints
// the command that resumes from there.
func watchRun(ctx context.Context, c *cli, cl *client.Client, id string, asJSON bool) error {
	rd := newRenderer(c.stdout, c.prog, strings.TrimRight(cl.BaseURL(), "/")+"/", id)
	if asJSON {
		rd = nil
	}
	var cursor int64
	var lostAt time.Time // zero while connected
	for {
		_, err := cl.Follow(ctx, id, cursor, func(ev api.Event) error {
			cursor = ev.Seq
			if !lostAt.IsZero() {
				lostAt = time.Time{}
				fmt.Fprintf(c.stderr, "reconnected to %s\n", cl.BaseURL())
			}
			if rd != nil {
				rd.event(ev)
			}
			return nil
		})
		if errors.Is(err, context.Canceled) {
			fmt.Fprintf(c.stderr, "stopped watching; the run goes on: %s events -f --after %d %s\n", c.prog, cursor, id)
			return err
		}
		if err == nil {
			break
		}
		if !lostConnection(err) {
			return err
		}
		switch {
		case lostAt.IsZero():
			lostAt = time.Now()
			fmt.Fprintf(c.stderr, "lost %s (%v)\n  the run goes on without this process; reconnecting from event %d (Ctrl-C stops watching)\n",
				cl.BaseURL(), err, cursor)
		case time.Since(lostAt) > watchGiveUp:
			return fmt.Errorf("nothing answered at %s for %s; the run goes on: when `%s dev` is back, %s events -f --after %d %s",
				cl.BaseURL(), watchGiveUp, c.prog, c.prog, cursor, id)
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(c.stderr, "stopped watching; the run goes on: %s events -f --after %d %s\n", c.prog, cursor, id)
			return ctx.Err()
		case <-time.After(time.Second):
		}
		if again, err := c.client(); err == nil {
			cl = again // dev may be back on another port
		}
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

// lostConnection reports whether err is the runtime not answering (a
// refused or cut connection, a 5xx of a runtime going down) rather than
// an answer: an API error below 500 is an answer and ends the watch.
func lostConnection(err error) bool {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Status >= 500
	}
	return true
}

func printOutcome(c *cli, r api.Run) {
	fmt.Fprintf(c.stdout, "\nrun %s %s after %d steps, %d tool calls, %d tokens\n", r.RunID, r.Status,
		r.Counters.Steps, r.Counters.ToolCallsUsed, r.Counters.TokensUsed)
	if r.Output != "" {
		fmt.Fprintf(c.stdout, "\n%s\n", termSafeText(r.Output))
	}
	if r.Error != "" {
		fmt.Fprintf(c.stdout, "error: %s\n", termSafe(r.Error))
	}
}
