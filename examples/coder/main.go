// Command coder is a Keel program with one agent, the coding agent of
// package agent: `go run ./examples/coder dev` runs it on the embedded
// runtime (its commands in a bubblewrap sandbox), `run coder "..."` and
// the other client commands talk to a runtime.
//
// It reads CODER_SHIP, the directory releases are shipped to, when a
// command runs the agent.
package main

import (
	"os"

	"github.com/keelrun/keel"
	"github.com/keelrun/keel/examples/coder/agent"
)

func main() {
	keel.MainFunc(func() ([]keel.Agent, error) {
		a, err := agent.New(agent.ConfigFromEnv(os.Getenv))
		if err != nil {
			return nil, err
		}
		return []keel.Agent{a}, nil
	})
}
