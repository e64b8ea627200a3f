// Command v1 is the first build of the versions scenario's program.
package main

import (
	"github.com/keelrun/keel"
	"github.com/keelrun/keel/internal/proof/awslocal/testdata/versions/agents"
)

func main() { keel.Main(agents.Agents("v1", "Publish the note.")...) }
