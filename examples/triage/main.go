// Command triage is a Keel program with one agent, the ticket triage of
// package agent: `triage dev` runs it on the embedded runtime, `triage run
// triage "..."` and the other client commands talk to a runtime, and with
// KEEL_ROLE set it is every Lambda function and the Fargate task of a
// deployment (`make synth APP=./examples/triage`).
//
// It reads TRIAGE_TICKETS_URL and TRIAGE_TICKETS_TOKEN (the ticket
// service; see cmd/ticketd) and exits 2 when one is missing or malformed.
package main

import (
	"fmt"
	"os"

	"github.com/keelrun/keel"
	"github.com/keelrun/keel/examples/triage/agent"
)

func main() {
	cfg, err := agent.ConfigFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "triage:", err)
		os.Exit(2)
	}
	a, err := agent.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "triage:", err)
		os.Exit(2)
	}
	keel.Main(a)
}
