package agentver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sort"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// Definition is what a version hashes: everything that gives a run's
// records their meaning. Its JSON is what [Save] stores.
type Definition struct {
	Agent string `json:"agent"`
	// InstructionsSHA256 is the sha256 of the system prompt: a changed
	// prompt is a new version, and the prompt itself need not be kept.
	InstructionsSHA256 string `json:"instructions_sha256"`
	// Model is the model spec ("anthropic:claude-sonnet-4-5"),
	// "scripted:" and the script's short hash, or "custom".
	Model           string     `json:"model"`
	Tools           []ToolDef  `json:"tools"`
	Limits          run.Limits `json:"limits"`
	Timeout         string     `json:"timeout,omitempty"`
	InputPolicy     string     `json:"input_policy,omitempty"`
	MaxOutputTokens int        `json:"max_output_tokens,omitempty"`
	ContextTokens   int        `json:"context_tokens,omitempty"`
	Build           string     `json:"build"`
	// Version is the hash of everything above (filled by [Describe]).
	Version string `json:"version"`
}

// ToolDef is one tool as a version records it: what the check needs to
// compare a later binary's tool with this one.
type ToolDef struct {
	Name string   `json:"name"`
	Mode run.Mode `json:"mode"`
	// Schema is the arguments' JSON Schema, SchemaSHA256 its hash.
	Schema       json.RawMessage `json:"schema"`
	SchemaSHA256 string          `json:"schema_sha256"`
	// Effect: the tool changes the world through the operation protocol;
	// Destination and Contract (ops.Contract.String) are then set.
	Effect      bool   `json:"effect,omitempty"`
	Destination string `json:"destination,omitempty"`
	Contract    string `json:"contract,omitempty"`
}

// Facts are the parts of an agent that are not its tools.
type Facts struct {
	Agent, Instructions, Model string
	Limits                     run.Limits
	Timeout                    time.Duration
	InputPolicy                run.InputPolicy
	MaxOutputTokens            int
	ContextTokens              int
	// Build is the binary's build ([Build]); empty: this process's.
	Build string
}

// Describe makes the definition of an agent from its facts and tools, and
// its version.
func Describe(f Facts, tools []tool.Tool) (Definition, error) {
	d := Definition{Agent: f.Agent, InstructionsSHA256: sum([]byte(f.Instructions)), Model: f.Model,
		Limits: f.Limits, InputPolicy: string(f.InputPolicy), MaxOutputTokens: f.MaxOutputTokens,
		ContextTokens: f.ContextTokens, Build: f.Build}
	if f.Timeout > 0 {
		d.Timeout = f.Timeout.String()
	}
	if d.Build == "" {
		d.Build = Build()
	}
	for _, t := range tools {
		info := t.Info()
		schema, err := canonical(info.Schema)
		if err != nil {
			return Definition{}, fmt.Errorf("tool %q schema: %w", info.Name, err)
		}
		td := ToolDef{Name: info.Name, Mode: info.Mode, Schema: schema, SchemaSHA256: sum(schema)}
		if e, ok := t.(tool.Effectful); ok {
			td.Effect, td.Destination, td.Contract = true, e.Name(), e.Contract().String()
		}
		d.Tools = append(d.Tools, td)
	}
	sort.Slice(d.Tools, func(i, j int) bool { return d.Tools[i].Name < d.Tools[j].Name })
	b, err := json.Marshal(d) // Version is empty here: it is not part of its own hash
	if err != nil {
		return Definition{}, err
	}
	d.Version = sum(b)
	return d, nil
}

// Tool returns the named tool of d.
func (d Definition) Tool(name string) (ToolDef, bool) {
	for _, t := range d.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return ToolDef{}, false
}

// Short is a version as people read it: its first 12 hex digits.
func Short(v string) string {
	if len(v) > 12 {
		return v[:12]
	}
	return v
}

// Build names this binary: the main module's version and, when the
// build recorded them, its VCS revision and whether the tree was modified
// ("(devel) rev 1a2b3c4d5e6f+modified").
func Build() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	out := bi.Main.Path + "@" + bi.Main.Version
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		}
	}
	if rev != "" {
		out += " rev " + Short(rev) + modified
	}
	return out
}

// canonical compacts a JSON document so that whitespace is not a change.
func canonical(b json.RawMessage) (json.RawMessage, error) {
	if len(b) == 0 {
		return json.RawMessage("{}"), nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
