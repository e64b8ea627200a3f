package compose

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/keelrun/keel/internal/backend/model/provider"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
	"github.com/keelrun/keel/internal/kernel/workspace"
	"github.com/keelrun/keel/internal/observe/doctor"
	"github.com/keelrun/keel/internal/observe/telemetry"
)

// Deployment is what this runtime reports of its own composition for
// `keel doctor` (GET /v1/deployment): the store and artifact store its
// configuration resolved to, each agent's model, limits and tools as the
// harness holds them (mode, effect, destination contract, secrets), and
// how a run is read after the fact. executor is "local" (keel dev) or
// "aws-stepfunctions"; getenv reads OTEL_EXPORTER_OTLP_ENDPOINT when the
// configuration names no traces endpoint.
func (rt *Runtime) Deployment(executor string, getenv func(string) string) doctor.Facts {
	var f doctor.Facts
	f.Keel.Version, f.Keel.Commit = telemetry.BuildVersion()
	f.Executor = executor
	f.Store = backend(rt.Config.Store)
	f.Artifacts = backend(rt.Config.Artifacts)
	f.MaxInlineState = store.MaxInlineState
	f.LeaseTTL = rt.Config.LeaseTTL
	if f.LeaseTTL == 0 {
		f.LeaseTTL = 30_000_000_000 // the harness's default
	}
	f.Sweeper = "the stack's schedule invokes the sweep role"
	if executor == "local" {
		f.Sweeper = fmt.Sprintf("keel dev sweeps at start and every %s", rt.Config.SweepInterval)
	}
	specs := rt.ModelSpecs()
	prices := provider.DefaultPrices()
	for k, v := range rt.Config.Models.Prices {
		prices[k] = v
	}
	names := make([]string, 0, len(rt.Agents))
	for n := range rt.Agents {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		ag := rt.Agents[name]
		d := rt.Catalog[name]
		spec := specs[name]
		fa := doctor.Agent{Name: name, Model: spec, ModelCredential: rt.credential(spec), Timeout: d.Timeout, Tools: []doctor.Tool{}}
		_, m, _ := strings.Cut(spec, ":")
		_, fa.Priced = prices.Lookup(m)
		if m == "" || strings.HasPrefix(spec, "scripted") {
			fa.Priced = false
		}
		l := d.Limits.WithDefaults()
		fa.Limits.MaxSteps, fa.Limits.MaxToolCalls, fa.Limits.MaxTokens, fa.Limits.MaxSpendMicroUSD = l.MaxSteps, l.MaxToolCalls, l.MaxTokens, l.MaxSpendMicroUSD
		if ag.Tools != nil {
			for _, tn := range ag.Tools.Names() {
				t, _ := ag.Tools.Get(tn)
				fa.Tools = append(fa.Tools, toolFacts(t))
			}
		}
		f.Agents = append(f.Agents, fa)
	}
	f.Bundle = doctor.Observability{
		BundleOn:    []string{string(run.StatusFailed), string(run.StatusNeedsHuman)},
		BundleFiles: telemetry.Files,
		Endpoints:   []string{"GET /v1/runs/{id}/bundle", "GET /v1/runs/{id}/explain", "GET /v1/runs/{id}/audit"},
		EventChain:  true,
		OTLP:        rt.Config.OTel.TracesURL,
	}
	if f.Bundle.OTLP == "" {
		f.Bundle.OTLP = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	// The endpoint may carry a collector's password (http://u:p@host);
	// the API masks every answer by value too (api.Deps.Secrets).
	f.Bundle.OTLP = rt.Secrets.String(withoutUserinfo(f.Bundle.OTLP))
	f.Workspaces = rt.workspaceFacts()
	return f
}

// workspaceFacts are the agents' workspaces as composed: which agents have
// one and run commands, the sandbox those commands get (the configuration
// decides it: a bubblewrap that cannot isolate fails Open), and where the
// trees and their versions are kept.
func (rt *Runtime) workspaceFacts() doctor.Workspaces {
	w := doctor.Workspaces{Agents: []doctor.AgentWorkspace{}, Sandbox: rt.Config.Sandbox}
	if w.Sandbox == "" {
		w.Sandbox = config.SandboxBubblewrap
	}
	if rt.Config.CommandRunner != "" {
		w.Sandbox = doctor.SandboxCommandRunner
	}
	for _, def := range rt.App.Agents {
		if def.Workspace == nil {
			continue
		}
		w.Agents = append(w.Agents, doctor.AgentWorkspace{Agent: def.Name, Commands: def.Workspace.Commands,
			Network: def.Workspace.Commands && def.Workspace.Policy.Network()})
	}
	slices.SortFunc(w.Agents, func(a, b doctor.AgentWorkspace) int { return strings.Compare(a.Agent, b.Agent) })
	if len(w.Agents) > 0 {
		w.Root = WorkspaceRoot(rt.Config)
		w.ManifestKey = workspace.ManifestKey(workspace.Version{RunID: "{run_id}", SHA256: "{sha256}"}).Path()
		w.BlobKey = workspace.BlobKey(workspace.Entry{Run: "{run_id}", SHA256: "{sha256}"}).Path()
	}
	return w
}

func backend(spec string) doctor.Backend {
	kind, loc, _ := strings.Cut(spec, ":")
	return doctor.Backend{Kind: kind, Location: loc}
}

func toolFacts(t tool.Tool) doctor.Tool {
	info := t.Info()
	ft := doctor.Tool{Name: info.Name, Mode: string(info.Mode), Long: info.Long}
	if e, ok := t.(tool.Effectful); ok {
		c := e.Contract()
		ft.Effect, ft.Destination, ft.Idempotent, ft.Lookup = true, withoutUserinfo(e.Name()), c.Idempotent, c.Lookup
	}
	if sh, ok := t.(tool.SecretHolder); ok && len(sh.Secrets()) > 0 {
		ft.DeclaresSecrets = true
	}
	return ft
}

// credential says where a model spec's key comes from, never the key.
func (rt *Runtime) credential(spec string) string {
	m := rt.Config.Models
	kind, _, _ := strings.Cut(spec, ":")
	switch kind {
	case "anthropic":
		if m.AnthropicSecretARN != "" {
			return "Secrets Manager " + m.AnthropicSecretARN + ", read by the runtime"
		}
		if m.AnthropicAPIKey != "" {
			return "ANTHROPIC_API_KEY in the runtime's environment"
		}
		return "ANTHROPIC_API_KEY (unset)"
	case "openai":
		if m.OpenAISecretARN != "" {
			return "Secrets Manager " + m.OpenAISecretARN + ", read by the runtime"
		}
		if m.OpenAIAPIKey != "" {
			return "OPENAI_API_KEY in the runtime's environment"
		}
		return "OPENAI_API_KEY (unset)"
	case "bedrock":
		return "the runtime's AWS role (no key)"
	case "scripted":
		return "none (scripted model)"
	}
	return "the program's own model value"
}

// Reporter serves a runtime's [Runtime.Deployment] to the API
// (api.Deployment).
type Reporter struct {
	Runtime  *Runtime
	Executor string
	Getenv   func(string) string
}

// Deployment implements api.Deployment.
func (r Reporter) Deployment(context.Context) doctor.Facts {
	getenv := r.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	return r.Runtime.Deployment(r.Executor, getenv)
}

// userinfo matches the user:password@ of a URL inside a destination name.
var userinfo = regexp.MustCompile(`(://)[^/@\s]+@`)

// withoutUserinfo masks credentials a destination's name may carry in a
// URL (https://user:token@host), since every principal of the API may read
// the deployment's facts.
func withoutUserinfo(name string) string { return userinfo.ReplaceAllString(name, "${1}****@") }
