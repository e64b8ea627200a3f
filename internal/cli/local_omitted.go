//go:build keel_lambda

package cli

import (
	"context"
	"fmt"
)

// The keel_lambda build (the deployed functions and task) leaves out what
// runs only on a developer's machine: `dev` (the embedded server, SQLite,
// the local state machine) and `crashtest` (the fault matrix and its test
// servers). The commands stay in the table so their names answer with why.

// observeCommandName is crashtest's hidden command (internal/proof/crash).
const observeCommandName = "crashtest-observe"

func devCommand() command       { return omittedCommand("dev") }
func crashtestCommand() command { return omittedCommand("crashtest") }
func observeCommand() command   { c := omittedCommand(observeCommandName); c.hidden = true; return c }

func omittedCommand(name string) command {
	return command{summary: "not in this build (-tags keel_lambda)", run: func(context.Context, *cli, []string) error {
		return fmt.Errorf("%s is not in this build: it was built with -tags keel_lambda (the deployment build); use a default build", name)
	}}
}
