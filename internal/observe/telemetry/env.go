package telemetry

import (
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/scrub"
)

// Env is what env.txt of a bundle says about the deployment that wrote it:
// which Keel, which model each agent uses, and the configuration with
// every secret masked.
type Env struct {
	// Version and Commit name the Keel build; empty: read from the
	// binary's build information ([BuildVersion]).
	Version, Commit string
	// Models maps an agent to its model spec ("anthropic:claude-…",
	// "scripted", "custom").
	Models map[string]string
	// Versions maps an agent to its version (package agentver): what
	// the runs this deployment creates record.
	Versions map[string]string
	// Config is the configuration as NAME=value lines, secrets masked
	// ([MaskedConfig]).
	Config []string
	// Secrets are masked by value in every file of the bundle (env.txt,
	// and the records: an echoed credential in an event or a state).
	Secrets scrub.Secrets
}

// Provider is the GenAI provider name of the agent's model spec
// ("anthropic", "openai", "aws.bedrock"), "" when unknown.
func (e Env) Provider(agent string) string {
	kind, _, ok := strings.Cut(e.Models[agent], ":")
	if !ok {
		return ""
	}
	if kind == "bedrock" {
		return "aws.bedrock"
	}
	return kind
}

// RequestModel is the model an agent's spec asks for, "" when unknown.
func (e Env) RequestModel(agent string) string {
	_, m, _ := strings.Cut(e.Models[agent], ":")
	return m
}

// BuildVersion reads the module version and VCS revision of the running
// binary (runtime/debug.ReadBuildInfo): "(devel)" and "" when built
// outside a module or a repository.
func BuildVersion() (version, commit string) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)", ""
	}
	version = bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			if s.Value == "true" && commit != "" {
				commit += "+dirty"
			}
		}
	}
	return version, commit
}

// withBuild fills Version and Commit from the binary when unset.
func (e Env) withBuild() Env {
	if e.Version == "" && e.Commit == "" {
		e.Version, e.Commit = BuildVersion()
	}
	return e
}

// Text renders env.txt.
func (e Env) Text(writtenAt time.Time) string {
	e = e.withBuild()
	var b strings.Builder
	fmt.Fprintf(&b, "keel_version=%s\nkeel_commit=%s\ngenai_semconv=%s\nwritten_at=%s\n", e.Version, e.Commit, GenAISemconv,
		writtenAt.UTC().Format(time.RFC3339Nano))
	agents := make([]string, 0, len(e.Models))
	for a := range e.Models {
		agents = append(agents, a)
	}
	slices.Sort(agents)
	for _, a := range agents {
		fmt.Fprintf(&b, "model.%s=%s\n", a, e.Models[a])
		if v := e.Versions[a]; v != "" {
			fmt.Fprintf(&b, "agent_version.%s=%s\n", a, v)
		}
	}
	b.WriteString("\n# configuration (secrets masked)\n")
	for _, l := range e.Config {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// Masked is what a secret's value becomes in env.txt.
const Masked = "****"

// secretField reports whether a configuration field holds a credential:
// a name ending in Key, Token, Secret, Password or Credentials
// (AnthropicAPIKey, SFNToken), not MaxTokens, and not the ARN naming where
// a secret is kept (that is where to look, not the secret).
func secretField(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"key", "token", "secret", "password", "credentials"} {
		if strings.HasSuffix(n, w) {
			return true
		}
	}
	return false
}

// MaskedConfig renders a configuration struct (config.Config) as sorted
// Field=value lines, nested structs as Outer.Inner=value, with every
// credential field masked (set: "****", empty: ""), so an operator sees
// that a key was configured and never which.
func MaskedConfig(cfg any) []string {
	var out []string
	var walk func(prefix string, v reflect.Value)
	walk = func(prefix string, v reflect.Value) {
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, fv := prefix+f.Name, v.Field(i)
			if fv.Kind() == reflect.Struct && f.Type.PkgPath() != "time" {
				walk(name+".", fv)
				continue
			}
			val := fmt.Sprint(fv.Interface())
			if fv.Kind() == reflect.Map || fv.Kind() == reflect.Slice {
				if fv.Len() == 0 {
					val = ""
				}
			}
			if secretField(f.Name) && !fv.IsZero() {
				val = Masked
			}
			out = append(out, name+"="+val)
		}
	}
	v := reflect.ValueOf(cfg)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() == reflect.Struct {
		walk("", v)
	}
	slices.Sort(out)
	return out
}
