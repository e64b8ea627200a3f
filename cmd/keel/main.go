// Command keel is Keel's stock program: the command-line client of any
// Keel API (run, approve, events, ...), `keel init` for a new agent
// module, and — with the research agent of internal/fixture built in —
// `keel dev` and every role of a deployment (KEEL_ROLE). The demo, the
// crash suite and `keel crashtest` run this binary, which is why its agent
// is the tests' fixture and not the research example: the example may change
// for readers without changing what they measure. Your own program is the
// same thing with your agents: call keel.Main from your main package.
package main

import (
	"fmt"
	"os"

	"github.com/keelrun/keel"
	"github.com/keelrun/keel/internal/fixture"
)

// main reads the research agent's own configuration (RESEARCH_*) and hands
// its agents to keel.Main (the research agent; research_lead too with
// RESEARCH_SUBAGENT=on); a bad variable exits 2 before anything starts.
func main() {
	c, err := fixture.ConfigFromEnviron(os.Environ())
	if err == nil {
		var as []keel.Agent
		if as, err = fixture.Agents(c); err == nil {
			keel.Main(as...)
		}
	}
	fmt.Fprintln(os.Stderr, "keel:", err)
	os.Exit(2)
}
