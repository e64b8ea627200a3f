// Command triage is a Keel program with one agent, the ticket triage of
// package agent: `triage dev` runs it on the embedded runtime, `triage run
// triage "..."` and the other client commands talk to a runtime, and with
// KEEL_ROLE set it is every Lambda function and the Fargate task of a
// deployment (`make synth APP=./examples/triage`).
//
// It reads TRIAGE_TICKETS_URL and TRIAGE_TICKETS_TOKEN (the ticket
// service; see cmd/ticketd) when a command runs the agent, and exits 2
// when one is missing or malformed.
package main

import (
	"os"

	"github.com/keelrun/keel"
	"github.com/keelrun/keel/examples/triage/agent"
)

func main() {
	// The agent is built only for the commands that run it: `triage runs`
	// or `triage approve` in a new shell needs no TRIAGE_* variables.
	keel.MainFunc(func() ([]keel.Agent, error) {
		cfg, err := agent.ConfigFromEnv(os.Getenv)
		if err != nil {
			return nil, err
		}
		a, err := agent.New(cfg)
		if err != nil {
			return nil, err
		}
		return []keel.Agent{a}, nil
	})
}
