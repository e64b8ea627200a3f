package research

import (
	_ "embed"
	"fmt"
	"io/fs"

	"github.com/keelrun/keel/internal/artifact"
	"github.com/keelrun/keel/internal/harness"
	"github.com/keelrun/keel/internal/model"
	"github.com/keelrun/keel/internal/tool"
)

// Script drives the scripted model through the whole research run:
// collect → analyze → draft → publish (approval) → final answer.
//
//go:embed script.json
var Script []byte

// System is the research agent's system prompt.
const System = `You are a research agent. Collect the documents, analyze them, draft a report,
then publish the drafted report by its artifact key and sha256. Publishing needs a person's approval.`

// AgentName is the name runs use for this agent.
const AgentName = "research"

// NewAgent builds the research agent around a model.
func NewAgent(m model.Model, corpus fs.FS, arts artifact.Store, to Publisher) (harness.Agent, error) {
	if corpus == nil {
		corpus = SampleCorpus()
	}
	reg, err := tool.NewRegistry(Tools(corpus, arts, to)...)
	if err != nil {
		return harness.Agent{}, fmt.Errorf("research agent: %w", err)
	}
	return harness.Agent{Name: AgentName, System: System, Model: m, Tools: reg, MaxTokens: 4096}, nil
}
