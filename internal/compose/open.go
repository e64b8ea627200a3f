package compose

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/backend/model/provider"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/model/scripted"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
	"github.com/keelrun/keel/internal/observe/otelkeel"
	"github.com/keelrun/keel/internal/scrub"
)

// Runtime is the opened parts every role is built from: the store, the
// artifact store and the agents, as the one configuration names them.
type Runtime struct {
	Config    config.Config
	Store     store.Store
	SQLite    *SQLiteStore // set when the store is SQLite
	Artifacts artifact.Store
	Agents    harness.AgentMap
	// Catalog is what the API and the schedule role know of the agents:
	// their names and run defaults.
	Catalog api.AgentSet
	Logger  *slog.Logger
	Faults  harness.FaultPoints
	// App is what the runtime was built from (keel doctor and the bundle's
	// env.txt describe it).
	App App
	// OTel are this process's trace and meter providers (the OTEL_*
	// variables); they export nothing when no endpoint is set.
	OTel *otelkeel.Providers
	// Secrets are the secret values masked in everything the runtime
	// writes or serves: the configuration's (config.Config.Secrets) and
	// those added by AddSecrets.
	Secrets scrub.Secrets
	// Children serves sub-agent calls of this runtime's harnesses.
	Children *ChildRuns
}

// AddSecrets adds values the runtime made itself (keel dev's token) to
// its Secrets, its logger and its exported spans. Call it before the API
// and bundles are built on the runtime.
func (rt *Runtime) AddSecrets(values ...string) {
	rt.Secrets = rt.Secrets.With(values...)
	rt.Logger = slog.New(scrub.Handler(rt.Logger.Handler(), scrub.New(values...)))
	rt.OTel.Mask(values...)
}

// Close flushes and stops the telemetry exporters, then releases the
// store.
func (rt *Runtime) Close() error {
	if rt == nil {
		return nil
	}
	var err error
	if rt.OTel != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if serr := rt.OTel.Shutdown(ctx); serr != nil {
			rt.Logger.Warn("telemetry not flushed", "err", serr)
		}
		cancel()
	}
	if rt.Store != nil {
		err = rt.Store.Close()
	}
	return err
}

// Flush exports the spans and metrics recorded so far: a Lambda role
// calls it at the end of every invocation, before Lambda freezes the
// process.
func (rt *Runtime) Flush(ctx context.Context) error {
	if rt == nil {
		return nil
	}
	return rt.OTel.Flush(ctx)
}

// Open opens what cfg names and builds app's agents on it. A process that
// creates or steps runs (keel dev and the local commands, the api, step
// and task roles) also stores each agent's version definition (package
// agentver) for later binaries to compare with; the other roles may not
// write the bucket and need not. cfg has its defaults applied here.
// Errors name the variable or the agent at fault.
func Open(ctx context.Context, cfg config.Config, app App, b Backends) (*Runtime, error) {
	rt, err := open(ctx, cfg, app, b)
	if err != nil {
		return nil, err
	}
	if !savesVersions(cfg.Role) {
		return rt, nil
	}
	if err := saveVersions(ctx, rt.Artifacts, rt.Versions()); err != nil {
		rt.Close()
		return nil, err
	}
	return rt, nil
}

func open(ctx context.Context, cfg config.Config, app App, b Backends) (*Runtime, error) {
	cfg = cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(app.Agents) == 0 {
		return nil, errors.New("no agents: pass at least one keel.Agent to keel.Main")
	}
	secrets := cfg.Secrets()
	rt := &Runtime{Config: cfg, Logger: slog.New(scrub.Handler(b.logger().Handler(), secrets)), Faults: b.Faults, App: app, Secrets: secrets}
	if rt.Faults == nil {
		rt.Faults = cfg.Faults()
	}
	var err error
	role := cfg.Role
	if role == "" {
		role = "local"
	}
	if rt.OTel, err = otelkeel.Setup(ctx, cfg.OTel, otelkeel.Process{Role: role, Secrets: secrets}); err != nil {
		return nil, err
	}
	if rt.Artifacts, err = openArtifacts(ctx, cfg.Artifacts, b); err != nil {
		rt.Close()
		return nil, err
	}
	if rt.Store, rt.SQLite, err = openStore(ctx, cfg.Store, rt.Artifacts, b); err != nil {
		rt.Close()
		return nil, err
	}
	if rt.Agents, rt.Catalog, err = buildAgents(ctx, cfg, app, rt.Artifacts, b, rt.Faults); err != nil {
		rt.Close()
		return nil, err
	}
	rt.maskToolSecrets()
	return rt, nil
}

// maskToolSecrets adds the credentials the agents' tools declare
// (tool.SecretHolder: an MCP server's token) to what the runtime masks in
// its logs, spans and bundles; the harness masks them in the records.
func (rt *Runtime) maskToolSecrets() {
	var vals []string
	for _, a := range rt.Agents {
		for _, n := range a.Tools.Names() {
			t, _ := a.Tools.Get(n)
			if sh, ok := t.(tool.SecretHolder); ok {
				vals = append(vals, sh.Secrets()...)
			}
		}
	}
	if len(vals) > 0 {
		rt.AddSecrets(vals...)
	}
}

// Harness builds a harness on the runtime for a worker named owner;
// canSpill: this worker is bounded and hands runs that reach a long tool
// to the long-running task.
func (rt *Runtime) Harness(owner string, canSpill bool) (*harness.Harness, error) {
	rt.children()
	return harness.New(harness.Options{Store: rt.Store, Artifacts: rt.Artifacts, Agents: rt.Agents,
		Owner: owner, LeaseTTL: rt.Config.LeaseTTL, CanSpill: canSpill, Faults: rt.Faults, Logger: rt.Logger,
		Telemetry: rt.telemetry(), Children: rt.Children})
}

var _ harness.Telemetry = (*otelkeel.Telemetry)(nil)

// telemetry is the harness's telemetry: a nil interface, not a typed nil
// pointer, when nothing is exported, so the harness skips every call.
func (rt *Runtime) telemetry() harness.Telemetry {
	if t := rt.OTel.Telemetry(); t != nil {
		return t
	}
	return nil
}

func buildAgents(ctx context.Context, cfg config.Config, app App, arts artifact.Store, b Backends, fp harness.FaultPoints) (harness.AgentMap, api.AgentSet, error) {
	agents, catalog := harness.AgentMap{}, api.AgentSet{}
	known := map[string]bool{}
	ws := &workspaces{cfg: cfg, arts: arts, log: b.logger(), faults: fp, runner: b.AWSCommandRunner}
	for _, def := range app.Agents {
		env, err := ws.toolEnv(ctx, def)
		if err != nil {
			return nil, nil, fmt.Errorf("agent %q: %w", def.Name, err)
		}
		tools, err := def.Tools(env)
		if err != nil {
			return nil, nil, fmt.Errorf("agent %q: %w", def.Name, err)
		}
		for _, t := range tools {
			known[t.Info().Name] = true
		}
		ver, err := describe(cfg, def, tools)
		if err != nil {
			return nil, nil, fmt.Errorf("agent %q: %w", def.Name, err)
		}
		if tools, err = wrapTools(tools, cfg.SpillTools, cfg.ToolDelay); err != nil {
			return nil, nil, fmt.Errorf("agent %q: %w", def.Name, err)
		}
		reg, err := newRegistry(tools...)
		if err != nil {
			return nil, nil, fmt.Errorf("agent %q: %w", def.Name, err)
		}
		m, err := resolveModel(ctx, cfg, def, b, fp)
		if err != nil {
			return nil, nil, err
		}
		prov, name := modelNames(cfg, def)
		agents[def.Name] = harness.Agent{Name: def.Name, System: def.System, Model: m, Tools: reg, MaxTokens: def.MaxTokens,
			ContextTokens: def.ContextTokens, Provider: prov, ModelName: name, OnLimit: def.OnLimit,
			Version: ver.Version, Definition: &ver, Policy: def.Policy}
		if def.Workspace != nil {
			a := agents[def.Name]
			if a.Workspace, err = ws.open(ctx, def); err != nil {
				return nil, nil, fmt.Errorf("agent %q: %w", def.Name, err)
			}
			agents[def.Name] = a
		}
		defaults := def.Defaults
		defaults.Version = ver.Version
		catalog[def.Name] = defaults
	}
	// A variable naming a tool no agent has is a typo: say so at start.
	for _, n := range cfg.SpillTools {
		if !known[n] {
			return nil, nil, fmt.Errorf("KEEL_SPILL_TOOLS: unknown tool %q", n)
		}
	}
	for n := range cfg.ToolDelay {
		if !known[n] {
			return nil, nil, fmt.Errorf("KEEL_TOOL_DELAY: unknown tool %q", n)
		}
	}
	return agents, catalog, nil
}

// resolveModel builds the model KEEL_MODEL names, else the agent's own.
func resolveModel(ctx context.Context, cfg config.Config, def AgentDef, b Backends, fp harness.FaultPoints) (model.Model, error) {
	wrap := b.WrapScripted
	if wrap == nil {
		wrap = func(s model.Streamer) model.Model {
			return model.NewTransport(s, model.TransportOptions{Provider: "scripted", Model: "scripted"})
		}
	}
	scriptedModel := func(m *scripted.Model) model.Model {
		if fp == nil {
			return wrap(m)
		}
		return wrap(faultStreamer{s: m, faults: fp})
	}
	spec := cfg.Model
	if spec == "" {
		switch {
		case def.Model.Model != nil:
			return def.Model.Model, nil
		case def.Model.Script != nil:
			m, err := scripted.Parse(def.Model.Script)
			if err != nil {
				return nil, fmt.Errorf("agent %q: scripted model: %w", def.Name, err)
			}
			return scriptedModel(m), nil
		case def.Model.Spec == "":
			return nil, fmt.Errorf("agent %q has no model: set keel.Agent.Model or KEEL_MODEL", def.Name)
		}
		spec = def.Model.Spec
	}
	where := fmt.Sprintf("agent %q: model %q", def.Name, spec)
	if cfg.Model != "" {
		where = fmt.Sprintf("KEEL_MODEL %q", spec)
	}
	if path, ok := strings.CutPrefix(spec, "scripted:"); ok {
		m, err := scripted.Load(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		return scriptedModel(m), nil
	}
	if b.NewModel == nil {
		return nil, fmt.Errorf("%s: no model providers in this process", where)
	}
	m, err := b.NewModel(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return m, nil
}

// modelNames names the model resolveModel builds, for spans and metrics:
// gen_ai.provider.name and gen_ai.request.model.
func modelNames(cfg config.Config, def AgentDef) (providerName, modelName string) {
	spec := cfg.Model
	if spec == "" {
		switch {
		case def.Model.Model != nil:
			return otelkeel.ProviderName(""), ""
		case def.Model.Script != nil:
			return otelkeel.ProviderName("scripted"), "scripted"
		}
		spec = def.Model.Spec
	}
	if strings.HasPrefix(spec, "scripted:") {
		return otelkeel.ProviderName("scripted"), "scripted"
	}
	sp, err := provider.ParseSpec(spec)
	if err != nil {
		return otelkeel.ProviderName(spec), ""
	}
	return otelkeel.ProviderName(sp.Provider), sp.Model
}
