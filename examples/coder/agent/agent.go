package agent

import (
	_ "embed"
	"errors"
	"path/filepath"

	"github.com/keelrun/keel"
)

// Script drives the scripted model through the whole run: write → write →
// test and pack (sandbox) → hash → ship (approval) → final answer.
//
//go:embed script.json
var Script []byte

// Name is the name runs use for this agent: keel run coder "...".
const Name = "coder"

// Instructions is the coder agent's system prompt.
const Instructions = `You are a coding agent. Write the project's files, run its tests in the sandbox,
pack a release, hash it, then ship the release by its path, sha256 and workspace version.
Shipping needs a person's approval.`

// Config is the coder agent's own configuration.
type Config struct {
	// Ship is CODER_SHIP: the directory releases are shipped to (default
	// .keel/shipped, under KEEL_DATA_DIR when set).
	Ship string
	// Model answers the agent; nil: the scripted run (KEEL_MODEL replaces
	// either).
	Model keel.Model
}

// ConfigFromEnv reads CODER_SHIP through getenv.
func ConfigFromEnv(getenv func(string) string) Config {
	c := Config{Ship: getenv("CODER_SHIP")}
	if c.Ship == "" {
		dir := getenv("KEEL_DATA_DIR")
		if dir == "" {
			dir = ".keel"
		}
		c.Ship = filepath.Join(dir, "shipped")
	}
	return c
}

// New returns the coder agent. Its commands run with the network off (the
// CommandPolicy's default), which is what makes the run tool read-only.
func New(cfg Config) (keel.Agent, error) {
	if cfg.Ship == "" {
		return keel.Agent{}, errors.New("coder: Config.Ship is required")
	}
	m := cfg.Model
	if m == nil {
		m = keel.ScriptedModel(Script)
	}
	dest := Destination{Dir: cfg.Ship}
	return keel.Agent{
		Name:         Name,
		Instructions: Instructions,
		Model:        m,
		Tools: []keel.Tool{
			writeFile(),
			keel.Command("run", "run a command in the workspace (network off); argv[0] is the program"),
			hashFile(),
			shipRelease(dest),
		},
		Workspace: &keel.WorkspaceConfig{Commands: &keel.CommandPolicy{}},
	}, nil
}
