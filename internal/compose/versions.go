package compose

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// describe is an agent's version definition as this process runs it:
// the model KEEL_MODEL names, else the agent's own, and the agent's tools
// before any wrapping (a spill or delay setting is the operator's, not a
// change of meaning).
func describe(cfg config.Config, def AgentDef, tools []tool.Tool) (agentver.Definition, error) {
	d := def.Defaults
	return agentver.Describe(agentver.Facts{
		Agent: def.Name, Instructions: def.System, Model: modelSpec(cfg, def),
		Limits: d.Limits, Timeout: d.Timeout, InputPolicy: d.InputPolicy,
		MaxOutputTokens: def.MaxTokens, ContextTokens: def.ContextTokens, Build: def.Build,
	}, tools)
}

// modelSpec names the model in a definition: a spec as written, a script
// by its hash, a model of the program's own as "custom".
func modelSpec(cfg config.Config, def AgentDef) string {
	switch {
	case cfg.Model != "":
		return cfg.Model
	case def.Model.Spec != "":
		return def.Model.Spec
	case def.Model.Script != nil:
		h := sha256.Sum256(def.Model.Script)
		return "scripted:" + hex.EncodeToString(h[:6])
	case def.Model.Model != nil:
		return "custom"
	}
	return ""
}

// Versions are the definitions of the agents of a runtime, by agent name.
type Versions map[string]agentver.Definition

// saveVersions stores each agent's definition, so that a later binary can
// compare a run's records with what this one meant by them.
func saveVersions(ctx context.Context, arts artifact.Store, vs Versions) error {
	for _, d := range vs {
		if err := agentver.Save(ctx, arts, d); err != nil {
			return fmt.Errorf("agent %q: %w", d.Agent, err)
		}
	}
	return nil
}

// Versions are the definitions of the runtime's agents: what their runs
// record as their version.
func (rt *Runtime) Versions() Versions {
	vs := Versions{}
	for name, a := range rt.Agents {
		if a.Definition != nil {
			vs[name] = *a.Definition
		}
	}
	return vs
}

// savesVersions: the roles that create runs (api) or run their Steps
// (step, task, and every local command) store the definitions; the
// deployment grants them s3:PutObject on the bucket (infra/cdk).
func savesVersions(role string) bool {
	switch role {
	case "", config.RoleAPI, config.RoleStep, config.RoleTask:
		return true
	}
	return false
}
