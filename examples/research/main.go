// Command research is a Keel program with one agent, the research agent of
// package agent: `go run ./examples/research dev` runs it on the embedded
// runtime, `run research "..."` and the other client commands talk to a
// runtime, and with KEEL_ROLE set it is every Lambda function and the
// Fargate task of a deployment (`make synth APP=./examples/research`).
//
// It reads RESEARCH_PUBLISH, RESEARCH_PUBLISH_CONTRACT and
// RESEARCH_PUBLISH_TIMEOUT (where reports are published; see
// agent.ConfigFromEnv) when a command runs the agent, and exits 2 when one
// is malformed.
package main

import (
	"os"

	"github.com/keelrun/keel"
	"github.com/keelrun/keel/examples/research/agent"
)

func main() {
	// The agent is built only for the commands that run it, so a malformed
	// RESEARCH_* variable does not stop `research runs` in another shell.
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
