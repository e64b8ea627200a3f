package keel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/keelrun/keel/internal/agentdef"
	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/backend/model/provider"
	"github.com/keelrun/keel/internal/cli"
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/kernel/model/scripted"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
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
// The client commands find the API through --url, KEEL_URL, or the url
// and token files `prog dev` writes into .keel/ (looked for in the working
// directory and its parents), so a new shell needs no exports.
//
// With KEEL_ROLE set (the CDK stack sets it), Main plays that role of the
// deployment: api, step, approval, finalize or schedule as a Lambda
// function on the Lambda Runtime API, or task as the run's Fargate task.
// So one binary, built once from your main package, is every function and
// the task image, and they cannot disagree on an agent.
//
// Configuration is read once from the environment (KEEL_*; see
// docs/configuration.md). Agents that are invalid — a duplicate name, a tool whose
// arguments are not a struct, an effect whose Promises need a Lookup it
// lacks, a model spec that names no provider — are reported before
// anything starts, and the process exits 2.
//
// Every message and hint names the program as it was started (the base
// name of os.Args[0]; "go run ." under go run), not "keel".
func Main(agents ...Agent) {
	app, err := build(agents)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", progName(os.Args[0]), err)
		os.Exit(2)
	}
	os.Exit(mainLazy(os.Args, func() (compose.App, error) { return app, nil }))
}

// MainFunc is [Main] for a program whose agents need configuration of
// their own (a service URL, a credential): it calls agents only for the
// commands that run them — dev, step, task, crashtest and every KEEL_ROLE
// — and at most once. The client commands (run, runs, show, events,
// approve, deny, cancel, cost, ...) and init never call it, so they work
// in a shell that has none of the agents' configuration.
//
// An error from agents, or an invalid agent, is a configuration error:
// the command prints it, without a usage block, and the process exits 2.
// Read the configuration inside agents, not before MainFunc:
//
//	func main() {
//		keel.MainFunc(func() ([]keel.Agent, error) {
//			cfg, err := tickets.ConfigFromEnv(os.Getenv)
//			if err != nil {
//				return nil, err
//			}
//			return []keel.Agent{newAgent(tickets.New(cfg))}, nil
//		})
//	}
func MainFunc(agents func() ([]Agent, error)) {
	os.Exit(mainLazy(os.Args, lazyApp(agents)))
}

// lazyApp turns MainFunc's agents into the command line's loader.
func lazyApp(agents func() ([]Agent, error)) func() (compose.App, error) {
	return func() (compose.App, error) {
		as, err := agents()
		if err != nil {
			return compose.App{}, err
		}
		return build(as)
	}
}

// mainLazy runs the command line of args (os.Args) and returns the exit
// code; ctx ends on SIGINT/SIGTERM.
func mainLazy(args []string, load func() (compose.App, error)) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	in := cli.IO{Prog: progName(args[0]), Args: args[1:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Environ: os.Environ, Setenv: os.Setenv}
	return cli.MainLazy(ctx, in, load)
}

// progName is how the user runs this program again: argv[0] as typed
// when it is a relative path (bin/shop, ./triage: a hint "shop approve"
// would not be found by the shell), else its base name (a name the shell
// found on PATH, or an absolute path a supervisor started), or "go run ."
// for the temporary binary go run builds (the user typed no name the
// shell would find).
func progName(argv0 string) string {
	slash := filepath.ToSlash(argv0)
	if strings.Contains(slash, "/go-build") && strings.Contains(slash, "/exe/") {
		return "go run ."
	}
	b := filepath.Base(argv0)
	if b == "" || b == "." || b == "/" {
		return "keel"
	}
	if strings.Contains(slash, "/") && !filepath.IsAbs(argv0) && !strings.ContainsAny(argv0, " \t\n'\"$`\\;&|<>()*?[]{}~!#") {
		return argv0
	}
	return b
}

// build checks the agents and turns them into the runtime's definitions.
func build(agents []Agent) (compose.App, error) {
	var app compose.App
	agents = copyAgents(agents)
	if err := resolveSubAgents(agents); err != nil {
		return compose.App{}, err
	}
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

// modelChoice is how Agent.def hands the agent's model to compose: a spec
// or a script checked now (so a typo fails at start, not at the first
// Step), any other Model as it is. Apart from def to keep def readable.
func modelChoice(model Model) (compose.ModelChoice, error) {
	var choice compose.ModelChoice
	switch m := model.(type) {
	case nil:
	case specModel:
		if _, err := provider.ParseSpec(m.spec); err != nil {
			return choice, err
		}
		choice.Spec = m.spec
	case scriptModel:
		if _, err := scripted.Parse(m.script); err != nil {
			return choice, err // its message names the scripted model already
		}
		choice.Script = m.script
	default:
		choice.Model = m
	}
	return choice, nil
}

func (a Agent) def() (compose.AgentDef, error) {
	if err := agentdef.CheckName("agent", a.Name); err != nil {
		return compose.AgentDef{}, err
	}
	fail := func(err error) (compose.AgentDef, error) {
		return compose.AgentDef{}, fmt.Errorf("agent %q: %w", a.Name, err)
	}
	if err := a.checkSettings(); err != nil {
		return fail(err)
	}
	if err := a.checkTools(); err != nil {
		return fail(err)
	}
	choice, err := modelChoice(a.Model)
	if err != nil {
		return fail(err)
	}
	policy, err := a.Versions.policy()
	if err != nil {
		return fail(err)
	}
	mcps, err := mcpTools(a.MCPServers, a.Workspace != nil && a.Workspace.Commands != nil)
	if err != nil {
		return fail(err)
	}
	l := a.Limits
	return compose.AgentDef{
		Name:   a.Name,
		System: a.Instructions,
		Model:  choice,
		Tools:  buildTools(a.Tools, mcps),
		Defaults: api.AgentDefaults{
			Limits:      run.Limits{MaxSteps: l.MaxSteps, MaxToolCalls: l.MaxToolCalls, MaxTokens: l.MaxTokens, MaxSpendMicroUSD: l.MaxSpendMicroUSD},
			Timeout:     l.Timeout,
			InputPolicy: a.InputPolicy,
		},
		MaxTokens:     a.MaxOutputTokens,
		ContextTokens: a.ContextTokens,
		Workspace:     a.Workspace.def(),
		OnLimit:       a.OnLimit.policy(),
		Policy:        policy,
	}, nil
}

// checkSettings refuses settings out of their range.
func (a Agent) checkSettings() error {
	if a.InputPolicy != "" && !a.InputPolicy.Valid() {
		return fmt.Errorf("InputPolicy %q: want reject, queue, interrupt or rollback", a.InputPolicy)
	}
	l := a.Limits
	if l.MaxSteps < 0 || l.MaxToolCalls < 0 || l.MaxTokens < 0 || l.MaxSpendMicroUSD < 0 || l.Timeout < 0 {
		return errors.New("limits must not be negative")
	}
	if err := a.OnLimit.check(); err != nil {
		return err
	}
	if a.MaxOutputTokens < 0 {
		return errors.New("MaxOutputTokens must not be negative")
	}
	if a.ContextTokens < 0 {
		return errors.New("ContextTokens must not be negative")
	}
	if a.ContextTokens > 0 && a.ContextTokens <= a.MaxOutputTokens {
		// The window holds the answer's ceiling as well as the transcript.
		return fmt.Errorf("ContextTokens %d must exceed MaxOutputTokens %d", a.ContextTokens, a.MaxOutputTokens)
	}
	return a.Workspace.check()
}

// checkTools refuses a zero or failed Tool, a name given twice, and a
// command tool the agent's workspace cannot run.
func (a Agent) checkTools() error {
	names := map[string]bool{}
	for i, t := range a.Tools {
		switch {
		case t.err != nil:
			return t.err
		case t.build == nil:
			return fmt.Errorf("tool %d is the zero Tool: make tools with keel.ReadOnly, keel.ConfirmOnce or keel.Effect", i)
		case names[t.name]:
			return fmt.Errorf("tool %q is given twice", t.name)
		}
		names[t.name] = true
		if err := checkCommandTool(a, t); err != nil {
			return err
		}
	}
	return nil
}

// buildTools makes the runtime's tools of an agent: its Go tools, marked
// long or priced as declared, then its MCP servers' tools.
func buildTools(tools []Tool, mcps func(compose.ToolEnv) ([]tool.Tool, error)) func(compose.ToolEnv) ([]tool.Tool, error) {
	return func(env compose.ToolEnv) ([]tool.Tool, error) {
		out := make([]tool.Tool, 0, len(tools))
		for _, t := range tools {
			rt := t.build(env.Artifacts)
			if t.long {
				rt = compose.MarkLong(rt)
			}
			if t.price > 0 {
				rt = compose.MarkPriced(rt, t.price)
			}
			out = append(out, rt)
		}
		more, err := mcps(env)
		return append(out, more...), err
	}
}
