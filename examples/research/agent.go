package research

import (
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/keelrun/keel"
)

// Script drives the scripted model through the whole research run:
// collect → analyze → draft → publish (approval) → final answer.
//
//go:embed script.json
var Script []byte

// Instructions is the research agent's system prompt.
const Instructions = `You are a research agent. Collect the documents, analyze them, draft a report,
then publish the drafted report by its artifact key and sha256. Publishing needs a person's approval.`

// AgentName is the name runs use for this agent.
const AgentName = "research"

// Config is the research agent's own configuration: where it publishes.
type Config struct {
	// Publish is RESEARCH_PUBLISH: dir:PATH (default dir:.keel/published,
	// under KEEL_DATA_DIR when set) or the http(s) URL of a publication
	// server.
	Publish string
	// Contract is RESEARCH_PUBLISH_CONTRACT, what that HTTP destination
	// promises: full (default), idempotent, lookup or none.
	Contract string
	// Timeout is RESEARCH_PUBLISH_TIMEOUT: one publication request
	// (default 30s).
	Timeout time.Duration
	// Corpus is the documents to research; nil: the shipped sample.
	Corpus fs.FS
	// Model answers the agent; nil: the scripted research run (KEEL_MODEL
	// replaces either).
	Model keel.Model
}

// Env names the research agent's own variables, for [keel.EnvVars.Check]:
// a RESEARCH_* variable it does not read stops the program at start.
func Env() keel.EnvVars {
	return keel.EnvVars{Prefix: "RESEARCH_", Names: []string{"RESEARCH_PUBLISH", "RESEARCH_PUBLISH_CONTRACT", "RESEARCH_PUBLISH_TIMEOUT"}}
}

// ConfigFromEnviron checks environ (os.Environ) against [Env], then reads
// the configuration from it ([ConfigFromEnv]).
func ConfigFromEnviron(environ []string) (Config, error) {
	if err := Env().Check(environ); err != nil {
		return Config{}, err
	}
	vars := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	return ConfigFromEnv(func(k string) string { return vars[k] })
}

// ConfigFromEnv reads the RESEARCH_* variables through getenv. Errors
// name the variable.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{Publish: getenv("RESEARCH_PUBLISH"), Contract: getenv("RESEARCH_PUBLISH_CONTRACT")}
	if c.Publish == "" {
		dir := getenv("KEEL_DATA_DIR")
		if dir == "" {
			dir = ".keel"
			if getenv("AWS_LAMBDA_FUNCTION_NAME") != "" {
				// The one writable directory a Lambda has.
				dir = filepath.Join(os.TempDir(), "keel")
			}
		}
		c.Publish = "dir:" + filepath.Join(dir, "published")
	}
	if s := getenv("RESEARCH_PUBLISH_TIMEOUT"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("RESEARCH_PUBLISH_TIMEOUT %q: want a positive duration such as 30s", s)
		}
		c.Timeout = d
	}
	if _, err := c.publisher(); err != nil {
		return c, err
	}
	return c, nil
}

func (c Config) publisher() (Publisher, error) {
	if dir, ok := strings.CutPrefix(c.Publish, "dir:"); ok && dir != "" {
		return DirPublisher{Dir: dir}, nil
	}
	if !strings.HasPrefix(c.Publish, "http://") && !strings.HasPrefix(c.Publish, "https://") {
		return nil, fmt.Errorf("RESEARCH_PUBLISH %q: want dir:PATH or an http(s) URL", c.Publish)
	}
	h := HTTPPublisher{Base: c.Publish}
	if c.Timeout > 0 {
		h.Client = &http.Client{Timeout: c.Timeout}
	}
	switch c.Contract {
	case "", "full":
	case "idempotent":
		h.NoLookup = true
	case "lookup":
		h.NotIdempotent = true
	case "none":
		h.NoLookup, h.NotIdempotent = true, true
	default:
		return nil, fmt.Errorf("RESEARCH_PUBLISH_CONTRACT %q: want full, idempotent, lookup or none", c.Contract)
	}
	return h, nil
}

// New builds the research agent: collect_documents and analyze_documents
// (read-only; analyze reports progress), draft_report (saves the report as
// an artifact) and publish_report (an effect: a person approves the exact
// artifact hash, then it is published through the destination).
func New(c Config) (keel.Agent, error) {
	to, err := c.publisher()
	if err != nil {
		return keel.Agent{}, err
	}
	corpus := c.Corpus
	if corpus == nil {
		corpus = SampleCorpus()
	}
	m := c.Model
	if m == nil {
		m = keel.ScriptedModel(Script)
	}
	return keel.Agent{
		Name:            AgentName,
		Instructions:    Instructions,
		Model:           m,
		Tools:           Tools(corpus, to),
		MaxOutputTokens: 4096,
	}, nil
}

// Main is the stock Keel program: the research agent configured from the
// environment, run by keel.Main.
func Main() {
	c, err := ConfigFromEnviron(os.Environ())
	if err == nil {
		var a keel.Agent
		if a, err = New(c); err == nil {
			keel.Main(a)
		}
	}
	fmt.Fprintln(os.Stderr, "keel:", err)
	os.Exit(2)
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func newID(prefix string) string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return prefix + "_" + hex.EncodeToString(b)
}
