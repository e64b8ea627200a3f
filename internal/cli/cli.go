// Package cli is the command line of every Keel binary: the stock `keel`
// and each program that calls keel.Main. It is the client of any Keel API
// (run, approve, events, ...), the embedded server (`dev`), the operator's
// `step`, the long-running task child (`task`), `init`, `record` and
// `crashtest` (the program's own agents under the fault matrix), and — when
// KEEL_ROLE is set — the role of a deployed function or task.
//
// Exit codes: 0 success; 1 failure (including a watched run that did not
// complete, and an approval declined at the prompt); 2 usage error (a bad
// flag or argument, or a request the API refused as malformed — the message
// names the flag or argument); 3 not found; 4 conflict (the run is
// finished, the approval was already decided or its action changed, the
// input policy refuses input); 130 interrupted.
package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/aws/roles"
	"github.com/keelrun/keel/internal/compose"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitNotFound    = 3
	exitConflict    = 4
	exitInterrupted = 130
)

// IO is what a process gives the command line.
type IO struct {
	// Prog is the program's name as the user types it, used in every
	// message and hint ("answer with: PROG approve ..."); empty means
	// "keel".
	Prog   string
	Args   []string // without the program name
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// Environ lists the environment (os.Environ) so that dev, task, step
	// and every role refuse a KEEL_* variable Keel does not read
	// (config.CheckEnviron); nil skips that check (tests that pass a
	// Getenv of their own).
	Environ func() []string
	// Setenv sets a variable of the process's environment (os.Setenv):
	// `dev --data-dir DIR` exports KEEL_DATA_DIR=DIR before the agents are
	// built, so an agent that places its own files under the data
	// directory, and the task child dev starts, see the flag. nil sets
	// nothing (tests).
	Setenv func(key, value string) error
}

// Main runs the command line of a Keel program with app's agents and
// returns the process's exit code. With KEEL_ROLE set it plays that role
// instead (see internal/config): a Lambda role on the Lambda Runtime API,
// or the long-running task. ctx ends on SIGINT/SIGTERM.
func Main(ctx context.Context, in IO, app compose.App) int {
	return MainLazy(ctx, in, func() (compose.App, error) { return app, nil })
}

// MainLazy is Main with the agents built by load, called only when a
// command runs them (dev, step, task, crashtest, a KEEL_ROLE) and at most
// once: the client commands (run, approve, events, ...) never call it, so
// they need none of the agents' own configuration. An error from load is a
// configuration error (exit 2).
func MainLazy(ctx context.Context, in IO, load func() (compose.App, error)) int {
	prog := in.Prog
	if prog == "" {
		prog = "keel"
	}
	c := &cli{prog: prog, stdin: bufio.NewReader(in.Stdin), stdout: in.Stdout, stderr: in.Stderr, getenv: in.Getenv, environ: in.Environ, setenv: in.Setenv, loadApp: load}
	if role := strings.TrimSpace(in.Getenv("KEEL_ROLE")); role != "" {
		if err := c.needApp(); err != nil {
			fmt.Fprintf(c.stderr, "%s: %v\n", prog, err)
			return exitUsage
		}
		return c.serveRole(ctx, role)
	}
	if roles.Narrowed {
		// A constant: a role build links no command.
		return c.noCommandLine()
	}
	return execute(ctx, in.Args, c)
}

// cli is what a command may use: its streams, the environment, and the
// connection settings resolved from flags and environment.
type cli struct {
	prog   string // the program's name, for messages and hints
	stdin  *bufio.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	// environ lists the environment for config.CheckEnviron; nil: no
	// check.
	environ func() []string
	setenv  func(key, value string) error
	// app holds the program's agents, for the commands that run them;
	// needApp fills it from loadApp before such a command runs.
	app     compose.App
	loadApp func() (compose.App, error)
	// dir is where .keel/ is looked for (and in its parents); empty means
	// the working directory.
	dir string
	// hc, when set, is the HTTP client for the API (tests); nil means a
	// default one.
	hc *http.Client

	url, token string // from the global flags
	apiURL     string // the URL client() resolved, for hints

	// fs is the flag set of the command being run, to print its help.
	fs *flag.FlagSet
}

// command is one subcommand.
type command struct {
	usage   string // arguments, after "keel NAME"
	summary string
	run     func(ctx context.Context, c *cli, args []string) error
	// fields maps API error fields to the flag or argument that set them,
	// so a refusal names what the user typed.
	fields map[string]string
	// hidden: not listed in the usage (a program's internal command).
	hidden bool
	// agents: the command runs the program's agents, so they are built
	// before it runs (see MainLazy).
	agents bool
}

// agentCommands are the commands that run the program's agents, built
// before the command parses its flags. dev builds them itself, after
// exporting its --data-dir (devCommand).
var agentCommands = []string{"task", "step", "crashtest", observeCommandName, "upgrade-check"}

// commands is the dispatch table.
func commands() map[string]command {
	m := map[string]command{
		"run":         runCommand(),
		"runs":        runsCommand(),
		"show":        showCommand(),
		"events":      eventsCommand(),
		"approve":     decideCommand(api.DecisionApprove),
		"deny":        decideCommand(api.DecisionDeny),
		"cancel":      cancelCommand(),
		"operations":  operationsCommand(),
		"settle":      settleCommand(),
		"raise":       raiseCommand(),
		"input":       inputCommand(),
		"fork":        forkCommand(),
		"checkpoints": checkpointsCommand(),
		"artifacts":   artifactsCommand(),
		"download":    downloadCommand(),
		"file":        fileCommand(),
		"verify":      verifyCommand(),
		"dev":         devCommand(),
		"task":        taskCommand(),
		"step":        stepCommand(),
		"init":        initCommand(),
		"record":      recordCommand(),
		"crashtest":   crashtestCommand(),
		"explain":     explainCommand(),
		"doctor":      doctorCommand(),
		"bundle":      bundleCommand(),
		"cost":        costCommand(),
		"mcp":         mcpCommand(),

		observeCommandName: observeCommand(),
	}
	// Outside the literal, so its long name does not realign the table.
	m["upgrade-check"] = upgradeCheckCommand()
	for _, n := range agentCommands {
		cmd := m[n]
		cmd.agents = true
		m[n] = cmd
	}
	return m
}

// needApp builds the program's agents once.
func (c *cli) needApp() error {
	if c.loadApp == nil {
		return nil
	}
	app, err := c.loadApp()
	c.loadApp = nil
	if err != nil {
		return err
	}
	c.app = app
	return nil
}

// execute parses the global flags, dispatches, and maps the outcome to an exit
// code.
func execute(ctx context.Context, args []string, c *cli) int {
	if c.prog == "" {
		c.prog = "keel"
	}
	cmds := commands()
	global := flag.NewFlagSet(c.prog, flag.ContinueOnError)
	global.SetOutput(c.stderr)
	global.StringVar(&c.url, "url", "", "Keel API URL (default $KEEL_URL)")
	global.StringVar(&c.token, "token", "", "API token (default $KEEL_TOKEN)")
	global.Usage = func() { printUsage(c.stderr, c.prog, cmds) }
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	rest := global.Args()
	if len(rest) == 0 {
		printUsage(c.stderr, c.prog, cmds)
		return exitUsage
	}
	name := rest[0]
	if name == "help" {
		printUsage(c.stdout, c.prog, cmds)
		return exitOK
	}
	cmd, ok := cmds[name]
	if !ok {
		fmt.Fprintf(c.stderr, "%s: unknown command %q\n", c.prog, name)
		printUsage(c.stderr, c.prog, cmds)
		return exitUsage
	}
	var err error
	if cmd.agents {
		if aerr := c.needApp(); aerr != nil {
			err = &configError{aerr}
		}
	}
	if err == nil {
		err = cmd.run(ctx, c, rest[1:])
	}
	if err == nil {
		return exitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(c.stdout, "usage: %s %s %s\n\n%s\n", c.prog, name, cmd.usage, cmd.summary)
		if c.fs != nil {
			fmt.Fprintln(c.stdout, "\nflags:")
			c.fs.SetOutput(c.stdout)
			c.fs.PrintDefaults()
		}
		return exitOK
	}
	return c.report(name, cmd, err)
}

func printUsage(w io.Writer, prog string, cmds map[string]command) {
	fmt.Fprintf(w, "usage: %s [--url URL] [--token TOKEN] COMMAND [flags] [args]\n", prog)
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		if !cmds[n].hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nThe API and its token: --url and --token, else KEEL_URL and KEEL_TOKEN, else the url and token")
	fmt.Fprintf(w, "files `%s dev` writes to .keel/ (looked for in this directory and its parents).\n", prog)
	fmt.Fprintln(w, "exit codes: 0 ok, 1 failure, 2 usage, 3 not found, 4 conflict, 130 interrupted")
}

// flags returns a flag set for a command, with --url and --token.
func (c *cli) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(c.prog+" "+name, flag.ContinueOnError)
	// Errors are reported once, by report; -h is printed by execute.
	fs.SetOutput(io.Discard)
	c.fs = fs
	fs.StringVar(&c.url, "url", c.url, "Keel API URL (default $KEEL_URL, else .keel/url)")
	fs.StringVar(&c.token, "token", c.token, "API token (default $KEEL_TOKEN, else .keel/token)")
	return fs
}

// parse parses flags anywhere among the positional arguments ("--" ends
// the flags) and returns the positional ones. A flag error is a usage
// error that names the flag (the flag package has printed it).
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &usageError{err.Error()}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// readText joins words into one text; a single "-" reads stdin, at most
// api.DefaultMaxBodyBytes of it (the API refuses a larger body anyway).
func (c *cli) readText(words []string) (string, error) {
	if len(words) == 1 && words[0] == "-" {
		const limit = api.DefaultMaxBodyBytes
		b, err := io.ReadAll(io.LimitReader(c.stdin, limit+1))
		if err != nil {
			return "", fmt.Errorf("reading stdin: %w", err)
		}
		if len(b) > limit {
			return "", usagef("stdin holds more than %d bytes (1 MiB), the most the API accepts; nothing was sent", limit)
		}
		return strings.TrimRight(string(b), "\n"), nil
	}
	return strings.Join(words, " "), nil
}
