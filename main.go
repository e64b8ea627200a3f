package keel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/keelrun/keel/internal/agentdef"
	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/artifact"
	"github.com/keelrun/keel/internal/cli"
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/model/provider"
	"github.com/keelrun/keel/internal/model/scripted"
	"github.com/keelrun/keel/internal/run"
	"github.com/keelrun/keel/internal/tool"
)

// Main is the whole program of a Keel deployment: call it from your main
// function with your agents. It never returns; it exits with the status of
// what it ran.
//
// With KEEL_ROLE unset, Main is the command line (os.Args):
//
//	prog dev                 the embedded runtime: HTTP API, local state
//	                         machine, SQLite and files under .keel/
//	prog run AGENT INPUT...  and every other client command of the stock
//	                         `keel` CLI (approve, events, show, cancel, ...)
//	prog step RUN_ID         one harness step of a run, by hand
//	prog init DIR            a new agent module
//
// With KEEL_ROLE set (the CDK stack sets it), Main plays that role of the
// deployment: api, step, approval, finalize or schedule as a Lambda
// function on the Lambda Runtime API, or task as the run's Fargate task.
// So one binary, built once from your main package, is every function and
// the task image, and they cannot disagree on an agent.
//
// Configuration is read once from the environment (KEEL_*; see the
// README). Agents that are invalid — a duplicate name, a tool whose
// arguments are not a struct, an effect whose Promises need a Lookup it
// lacks, a model spec that names no provider — are reported before
// anything starts, and the process exits 2.
func Main(agents ...Agent) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	app, err := build(agents)
	if err != nil {
		fmt.Fprintln(os.Stderr, "keel:", err)
		stop()
		os.Exit(2)
	}
	code := cli.Main(ctx, cli.IO{Args: os.Args[1:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}, app)
	stop()
	os.Exit(code)
}

// build checks the agents and turns them into the runtime's definitions.
func build(agents []Agent) (compose.App, error) {
	var app compose.App
	seen := map[string]bool{}
	for _, a := range agents {
		def, err := a.def()
		if err != nil {
			return compose.App{}, err
		}
		if seen[a.Name] {
			return compose.App{}, fmt.Errorf("agent %q is given twice", a.Name)
		}
		seen[a.Name] = true
		app.Agents = append(app.Agents, def)
	}
	if len(app.Agents) == 0 {
		return compose.App{}, errors.New("no agents: call keel.Main with at least one keel.Agent")
	}
	return app, nil
}

func (a Agent) def() (compose.AgentDef, error) {
	if err := agentdef.CheckName("agent", a.Name); err != nil {
		return compose.AgentDef{}, err
	}
	fail := func(err error) (compose.AgentDef, error) {
		return compose.AgentDef{}, fmt.Errorf("agent %q: %w", a.Name, err)
	}
	if a.InputPolicy != "" && !a.InputPolicy.Valid() {
		return fail(fmt.Errorf("InputPolicy %q: want reject, queue, interrupt or rollback", a.InputPolicy))
	}
	l := a.Limits
	if l.MaxSteps < 0 || l.MaxToolCalls < 0 || l.MaxTokens < 0 || l.MaxSpendMicroUSD < 0 || l.Timeout < 0 {
		return fail(errors.New("limits must not be negative"))
	}
	if a.MaxOutputTokens < 0 {
		return fail(errors.New("MaxOutputTokens must not be negative"))
	}
	if a.ContextTokens < 0 {
		return fail(errors.New("ContextTokens must not be negative"))
	}
	if a.ContextTokens > 0 && a.ContextTokens <= a.MaxOutputTokens {
		// The window holds the answer's ceiling as well as the transcript.
		return fail(fmt.Errorf("ContextTokens %d must exceed MaxOutputTokens %d", a.ContextTokens, a.MaxOutputTokens))
	}
	names := map[string]bool{}
	for i, t := range a.Tools {
		switch {
		case t.err != nil:
			return fail(t.err)
		case t.build == nil:
			return fail(fmt.Errorf("tool %d is the zero Tool: make tools with keel.ReadOnly, keel.ConfirmOnce or keel.Effect", i))
		case names[t.name]:
			return fail(fmt.Errorf("tool %q is given twice", t.name))
		}
		names[t.name] = true
	}
	var choice compose.ModelChoice
	switch m := a.Model.(type) {
	case nil:
	case specModel:
		if _, err := provider.ParseSpec(m.spec); err != nil {
			return fail(err)
		}
		choice.Spec = m.spec
	case scriptModel:
		if _, err := scripted.Parse(m.script); err != nil {
			return fail(fmt.Errorf("scripted model: %w", err))
		}
		choice.Script = m.script
	default:
		choice.Model = m
	}
	tools := a.Tools
	return compose.AgentDef{
		Name:   a.Name,
		System: a.Instructions,
		Model:  choice,
		Tools: func(arts artifact.Store) ([]tool.Tool, error) {
			out := make([]tool.Tool, 0, len(tools))
			for _, t := range tools {
				rt := t.build(arts)
				if t.long {
					rt = compose.MarkLong(rt)
				}
				out = append(out, rt)
			}
			return out, nil
		},
		Defaults: api.AgentDefaults{
			Limits:      run.Limits{MaxSteps: l.MaxSteps, MaxToolCalls: l.MaxToolCalls, MaxTokens: l.MaxTokens, MaxSpendMicroUSD: l.MaxSpendMicroUSD},
			Timeout:     l.Timeout,
			InputPolicy: a.InputPolicy,
		},
		MaxTokens:     a.MaxOutputTokens,
		ContextTokens: a.ContextTokens,
	}, nil
}
