// Command keel is Keel's stock program: the command-line client of any
// Keel API (run, approve, events, ...), `keel init` for a new agent
// module, and — with the research example agent built in — `keel dev`
// and every role of a deployment (KEEL_ROLE). Your own program is the same
// thing with your agents: call keel.Main from your main package.
package main

import "github.com/keelrun/keel/examples/research"

func main() { research.Main() }
