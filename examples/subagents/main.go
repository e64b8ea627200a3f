// Command subagents is a coordinator that hands two parts of a job to two
// sub-agents: a researcher that reads, and a publisher whose one effect
// waits for a person's approval. Each sub-agent call is a child run of
// its own (keel runs --parent RUN_ID lists them); the coordinator's run
// waits for both without holding a worker and answers with what they
// returned.
//
//	go run ./examples/subagents dev
//	keel run coordinator "Report on Q3"
//
// The models are scripted, so the example runs without a provider key.
package main

import (
	"context"
	_ "embed"
	"errors"
	"os"
	"path/filepath"

	"github.com/keelrun/keel"
)

var (
	//go:embed scripts/coordinator.json
	coordinatorScript []byte
	//go:embed scripts/researcher.json
	researcherScript []byte
	//go:embed scripts/publisher.json
	publisherScript []byte
)

// Topic is what the researcher looks up.
type Topic struct {
	Name string `json:"name" jsonschema:"minLength=1,maxLength=200"`
}

// Summary is what the publisher publishes.
type Summary struct {
	Text string `json:"text" jsonschema:"minLength=1,maxLength=2000"`
}

func lookup(_ context.Context, t Topic) (string, error) {
	return "Figures for " + t.Name + ": revenue +12%, churn 3%, two new regions.", nil
}

// The board stands for your publishing service: one file per operation
// id, so publishing twice is a no-op and a publication can be looked up.
func board() string { return filepath.Join(os.TempDir(), "keel-board") }

func publish(_ context.Context, opID string, s Summary) (keel.Outcome, error) {
	tmp := filepath.Join(board(), "."+opID)
	err := errors.Join(os.MkdirAll(board(), 0o755), os.WriteFile(tmp, []byte(s.Text), 0o644))
	if err == nil {
		if err = os.Link(tmp, filepath.Join(board(), opID)); errors.Is(err, os.ErrExist) {
			err = nil
		}
	}
	os.Remove(tmp)
	return keel.Outcome{ExternalID: opID}, err
}

func published(_ context.Context, opID string) (keel.Outcome, bool, error) {
	_, err := os.Stat(filepath.Join(board(), opID))
	if errors.Is(err, os.ErrNotExist) {
		return keel.Outcome{}, false, nil
	}
	return keel.Outcome{ExternalID: opID}, err == nil, err
}

func agents() []keel.Agent {
	return []keel.Agent{
		{
			Name:         "coordinator",
			Instructions: "Split the job: research goes to the researcher, publishing to the publisher.",
			Model:        keel.ScriptedModel(coordinatorScript),
			Tools: []keel.Tool{
				keel.SubAgent("research", "Hand a research question to the researcher.", "researcher"),
				keel.SubAgent("publish", "Hand a text to the publisher.", "publisher",
					keel.SubAgentLimits(keel.Limits{MaxToolCalls: 5})),
			},
			Limits: keel.Limits{MaxSpendMicroUSD: 1_000_000}, // 1 USD for the coordinator and its children together
		},
		{
			Name:         "researcher",
			Instructions: "Answer the research question from the figures.",
			Model:        keel.ScriptedModel(researcherScript),
			Tools:        []keel.Tool{keel.ReadOnly("lookup", "Look up the figures of a topic.", lookup)},
		},
		{
			Name:         "publisher",
			Instructions: "Publish the text you are given.",
			Model:        keel.ScriptedModel(publisherScript),
			Tools: []keel.Tool{
				keel.Effect("publish_summary", "Publish a summary on the board.", keel.EffectSpec[Summary]{
					Dispatch: publish, Lookup: published, Promises: keel.IdempotentByKey | keel.LookupByKey,
				}),
			},
		},
	}
}

func main() { keel.Main(agents()...) }
