package doctor

import (
	"fmt"
	"strings"

	keelcost "github.com/keelrun/keel/internal/observe/cost"
)

// RenderIdle is the deployment's idle cost as a doctor section: what the
// stack synthesized in template (a path, for the heading) bills while no
// run exists, from [keelcost.IdleCost]. A deployment on AWS cannot read its
// own template, so the section comes from the cdk.out file `make synth`
// wrote (`doctor --template`), not from GET /v1/deployment.
func RenderIdle(template string, r keelcost.IdleReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Idle cost of %s — what the deployment bills while nothing runs\n", template)
	var body strings.Builder
	if err := r.Print(&body); err != nil {
		// A strings.Builder does not fail; keep the error visible anyway.
		fmt.Fprintf(&body, "error: %v\n", err)
	}
	for _, line := range strings.SplitAfter(strings.TrimRight(body.String(), "\n"), "\n") {
		b.WriteString("   " + line)
	}
	b.WriteString("\n")
	return b.String()
}
