// Package researchtest is the research agent for Keel's own tests: the
// same tool functions as package research, built straight on the runtime's
// internals (internal/agentdef), so that tests of the harness, the dev
// server and the AWS roles can run the reference agent without keel.Main.
// Only test files import it: nothing under internal/ depends on an example.
package researchtest

import (
	"context"
	"fmt"

	"github.com/keelrun/keel"
	"github.com/keelrun/keel/examples/research"
	"github.com/keelrun/keel/internal/agentdef"
	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/artifact"
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/harness"
	"github.com/keelrun/keel/internal/model"
	"github.com/keelrun/keel/internal/ops"
	"github.com/keelrun/keel/internal/run"
	"github.com/keelrun/keel/internal/tool"
)

// Tools builds the research agent's four tools on arts, publishing to to.
func Tools(arts artifact.Store, to research.Publisher) ([]tool.Tool, error) {
	corpus := research.SampleCorpus()
	pub := research.Publish(to)
	var bs []agentdef.Builder
	for _, mk := range []func() (agentdef.Builder, error){
		func() (agentdef.Builder, error) {
			return agentdef.Func("collect_documents", "List the documents of the research corpus.", run.ModeSafeReadonly, research.Collect(corpus))
		},
		func() (agentdef.Builder, error) {
			return agentdef.Func("analyze_documents", "Analyze named documents.", run.ModeSafeReadonly, research.Analyze(corpus))
		},
		func() (agentdef.Builder, error) {
			return agentdef.Func("draft_report", "Draft the research report.", run.ModeSafeReadonly, research.DraftReport(corpus))
		},
		func() (agentdef.Builder, error) {
			return agentdef.Effect("publish_report", "Publish a drafted report.", agentdef.EffectFuncs[research.PublishArgs]{
				Dispatch: func(ctx context.Context, opID string, a research.PublishArgs) (ops.Outcome, error) {
					out, err := pub.Dispatch(ctx, opID, a)
					return ops.Outcome{ExternalID: out.ExternalID, Result: out.Result}, err
				},
				Lookup:  lookup(pub.Lookup),
				Prepare: pub.Prepare, Destination: pub.Destination,
				Contract: Contract(to),
			})
		},
	} {
		b, err := mk()
		if err != nil {
			return nil, err
		}
		bs = append(bs, b)
	}
	out := make([]tool.Tool, len(bs))
	for i, b := range bs {
		out[i] = b(arts)
	}
	return out, nil
}

// Contract is what to promises, as the operation protocol reads it.
func Contract(to research.Publisher) ops.Contract {
	p := to.Promises()
	return ops.Contract{Idempotent: p&keel.IdempotentByKey != 0, Lookup: p&keel.LookupByKey != 0}
}

// Agent is the research agent on model m, for harness.AgentMap.
func Agent(m model.Model, arts artifact.Store, to research.Publisher) (harness.Agent, error) {
	tools, err := Tools(arts, to)
	if err != nil {
		return harness.Agent{}, err
	}
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		return harness.Agent{}, fmt.Errorf("research agent: %w", err)
	}
	return harness.Agent{Name: research.AgentName, System: research.Instructions, Model: m, Tools: reg, MaxTokens: 4096}, nil
}

// App is the research agent as compose builds it, on the scripted research
// run unless KEEL_MODEL says otherwise.
func App(to research.Publisher) compose.App {
	return compose.App{Agents: []compose.AgentDef{{
		Name: research.AgentName, System: research.Instructions,
		Model:     compose.ModelChoice{Script: research.Script},
		Tools:     func(arts artifact.Store) ([]tool.Tool, error) { return Tools(arts, to) },
		Defaults:  api.AgentDefaults{},
		MaxTokens: 4096,
	}}}
}

func lookup(l func(context.Context, string) (keel.Outcome, bool, error)) func(context.Context, string) (ops.Outcome, bool, error) {
	if l == nil {
		return nil
	}
	return func(ctx context.Context, opID string) (ops.Outcome, bool, error) {
		out, found, err := l(ctx, opID)
		return ops.Outcome{ExternalID: out.ExternalID, Result: out.Result}, found, err
	}
}
