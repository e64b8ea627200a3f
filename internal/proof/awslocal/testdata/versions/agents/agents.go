// Package agents is the agent program the versions scenario deploys
// twice (internal/proof/awslocal): v1 and v2 are two builds of it that
// differ only in their instructions, a compatible change. Each has a
// pinned agent and an agent that upgrades; each one's publish names the
// build that dispatched it in its outcome, so the run's records say which
// code performed the effect.
package agents

import (
	"context"

	"github.com/keelrun/keel"
)

// script calls publish once, then answers.
const script = `{"turns":[{"tool_calls":[{"name":"publish","args":{"title":"Q3"}}]}],"final":"Published."}`

// Publish is publish's arguments, the same in both builds.
type Publish struct {
	Title string `json:"title" jsonschema:"required"`
}

func publish(build string) keel.Tool {
	return keel.Effect("publish", "Publish a note", keel.EffectSpec[Publish]{
		Dispatch: func(_ context.Context, opID string, _ Publish) (keel.Outcome, error) {
			return keel.Outcome{ExternalID: build + "/" + opID}, nil
		},
		Promises:    keel.IdempotentByKey,
		Destination: "notes",
	})
}

// Agents are build's agents: "pinned" (keel.VersionPin) and "moving"
// (the default, upgrade after the check).
func Agents(build, instructions string) []keel.Agent {
	pinned := keel.Agent{Name: "pinned", Instructions: instructions, Model: keel.ScriptedModel([]byte(script)),
		Tools: []keel.Tool{publish(build)}, Versions: keel.VersionPin}
	moving := keel.Agent{Name: "moving", Instructions: instructions, Model: keel.ScriptedModel([]byte(script)),
		Tools: []keel.Tool{publish(build)}}
	return []keel.Agent{pinned, moving}
}
