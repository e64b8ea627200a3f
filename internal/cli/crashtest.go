//go:build !keel_lambda

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/keelrun/keel/internal/agentdef"
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/proof/crash"
)

// crashtestCommand runs one of a program's agents through the fault
// matrix (internal/proof/crash.ProgramMatrix) and fails when an effect reached
// its destination twice, an approval was lost, or a recorded outcome
// disagrees with the destination — and, unless --accept-unverified, when
// a row could not be checked at the destination at all.
func crashtestCommand() command {
	cmd := command{usage: "[--program PATH] [--agent NAME] [--script FILE] [--input TEXT] [--env K=V]... [--all-hits] [--soak N] [--accept-unverified] [--json]",
		summary: "prove an agent's effects: kill its program at every fault point, restart it, count each effect at its destination"}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("crashtest")
		program := fs.String("program", "", "the Keel program to run (default: this program)")
		agent := fs.String("agent", "", "the agent to run (default: the program's only agent)")
		script := fs.String("script", "", "scripted-model script to replay (keel record RUN_ID -o FILE); default: the agent's own model")
		input := fs.String("input", "crashtest", "the run's input")
		var env multiFlag
		fs.Var(&env, "env", "K=V added to every program process (repeatable); the caller's environment is passed on, minus KEEL_*")
		allHits := fs.Bool("all-hits", false, "kill at every hit of every point (default: each point's first hit)")
		soak := fs.Int("soak", 0, "add N runs killed at random moments")
		seed := fs.Uint64("seed", 1, "seed of the soak's random kills")
		parallel := fs.Int("parallel", 2, "runs played at once")
		asJSON := fs.Bool("json", false, "print the report as JSON")
		acceptUnverified := fs.Bool("accept-unverified", false, "exit 0 even when a row could not be verified (an effect dispatched twice with no Count hook or Lookup to ask its destination, or whose Count or Lookup failed)")
		dir := fs.String("dir", "", "scratch directory (default: a temporary one; a failed run's directory is kept)")
		keep := fs.Bool("keep", false, "keep every run's directory")
		rest, err := parse(fs, args)
		if err != nil {
			return err
		}
		if len(rest) > 0 {
			return usagef("unexpected argument %q", rest[0])
		}
		if *soak < 0 || *parallel < 1 {
			return usagef("--soak must not be negative and --parallel must be at least 1")
		}
		prog, err := crashtestTarget(c, *program, agent)
		if err != nil {
			return err
		}
		for _, kv := range env {
			if !strings.Contains(kv, "=") {
				return usagef("--env %q: want K=V", kv)
			}
		}
		if *script != "" {
			abs, err := filepath.Abs(*script)
			if err != nil {
				return err
			}
			if _, err := os.Stat(abs); err != nil {
				return usagef("--script: %v", err)
			}
			env = append(env, "KEEL_MODEL=scripted:"+abs)
		} else {
			fmt.Fprintf(c.stderr, "%s crashtest: no --script: the agent's own model answers every run (record one with %s record RUN_ID -o FILE)\n", c.prog, c.prog)
		}
		scratch := *dir
		if scratch == "" {
			if scratch, err = os.MkdirTemp("", "keel-crashtest-"); err != nil {
				return err
			}
		} else if err := os.MkdirAll(scratch, 0o755); err != nil {
			return err
		}
		cfg := crash.Config{Keel: prog, Dir: scratch, Keep: *keep, Parallel: *parallel, Agent: *agent, Input: *input, Env: env,
			Counter: crash.ProgramCounter{Program: prog, Env: env}}
		if !*asJSON {
			cfg.Progress = c.stderr
		}
		if err := cfg.Validate(); err != nil {
			return usagef("%v", err)
		}
		rep := crash.ProgramMatrix(ctx, cfg, crash.ProgramOptions{AllHits: *allHits, Soak: *soak, Seed: *seed})
		if *asJSON {
			b, err := json.MarshalIndent(rep, "", "  ")
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "%s\n", b)
		} else {
			crash.PrintProgram(c.stdout, rep)
		}
		if err := verdict(rep, *acceptUnverified); err != nil {
			return err
		}
		if *dir == "" && !*keep {
			_ = os.RemoveAll(scratch)
		}
		return nil
	}
	return cmd
}

// crashtestTarget is the program to play (default: this one) and fills
// in the agent (default: this program's only one).
func crashtestTarget(c *cli, program string, agent *string) (string, error) {
	if program == "" {
		prog, err := os.Executable()
		if err != nil {
			return "", err
		}
		if *agent == "" && len(c.app.Agents) == 1 {
			*agent = c.app.Agents[0].Name
		}
		known := false
		for _, a := range c.app.Agents {
			known = known || a.Name == *agent
		}
		if *agent != "" && !known {
			return "", usagef("--agent %q: this program has no such agent", *agent)
		}
		program = prog
	}
	if *agent == "" {
		return "", usagef("--agent: name the agent to run")
	}
	return program, nil
}

// verdict is crashtest's exit: an error when a run failed, or when one
// is unverified and the user did not accept that. An unverified run is
// not a pass: crashtest did not see the destination, so it cannot say
// there was no duplicate.
func verdict(rep crash.ProgramReport, acceptUnverified bool) error {
	runs := len(rep.Rows) + 1
	if n := rep.Failed(); n > 0 {
		return fmt.Errorf("%d of %d runs failed", n, runs)
	}
	if u := rep.Unverified(); len(u) > 0 && !acceptUnverified {
		return fmt.Errorf("%d of %d runs unverified (%s): crashtest could not check their effects at the destination; "+
			"follow the advice above, or pass --accept-unverified to accept them unchecked", len(u), runs, strings.Join(u, ", "))
	}
	return nil
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// observer is an effect that can say what its destination holds of an
// operation (agentdef's effects).
type observer interface {
	Observe(ctx context.Context, op run.Operation) agentdef.Observation
}

// observeCommand is crashtest's question to the program, in a process of
// its own: the operations (JSON, on stdin) are answered by each effect's
// count hook or Lookup — the program's own code, with its own
// configuration. It never dispatches. Not listed in the usage.
func observeCommand() command {
	cmd := command{usage: "AGENT < operations.json", summary: "", hidden: true}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("want AGENT")
		}
		var tools map[string]observer
		for _, a := range c.app.Agents {
			if a.Name != args[0] {
				continue
			}
			ts, err := a.Tools(compose.ToolEnv{})
			if err != nil {
				return err
			}
			tools = map[string]observer{}
			for _, t := range ts {
				if o, ok := t.(observer); ok {
					tools[t.Info().Name] = o
				}
			}
		}
		if tools == nil {
			return usagef("no agent %q in this program", args[0])
		}
		b, err := io.ReadAll(c.stdin)
		if err != nil {
			return err
		}
		var ops []run.Operation
		if err := json.Unmarshal(b, &ops); err != nil {
			return usagef("operations: %v", err)
		}
		out := map[string]agentdef.Observation{}
		for _, op := range ops {
			o, ok := tools[op.Tool]
			if !ok {
				out[op.ID] = agentdef.Observation{Error: fmt.Sprintf("no effect %q in agent %s", op.Tool, args[0])}
				continue
			}
			out[op.ID] = o.Observe(ctx, op)
		}
		return json.NewEncoder(c.stdout).Encode(out)
	}
	return cmd
}

// observeCommandName is the hidden command crashtest's counter runs.
const observeCommandName = crash.ObserveCommand
