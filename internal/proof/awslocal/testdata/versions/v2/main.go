// Command v2 is the second build: only the instructions changed.
package main

import (
	"github.com/keelrun/keel"
	"github.com/keelrun/keel/internal/proof/awslocal/testdata/versions/agents"
)

func main() { keel.Main(agents.Agents("v2", "Publish the note, then say so.")...) }
