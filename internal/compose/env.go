package compose

import "github.com/keelrun/keel/internal/observe/telemetry"

// BundleEnv is what a debug bundle's env.txt says of this runtime: the
// build, each agent's model and the configuration with its credentials
// masked, by field name and by value (rt.Secrets, masked in every file).
func (rt *Runtime) BundleEnv() telemetry.Env {
	env := telemetry.Env{Models: rt.ModelSpecs(), Config: telemetry.MaskedConfig(rt.Config), Secrets: rt.Secrets}
	env.Version, env.Commit = telemetry.BuildVersion()
	env.Versions = map[string]string{}
	for name, d := range rt.Versions() {
		env.Versions[name] = d.Version
	}
	return env
}

// ModelSpecs names each agent's model: KEEL_MODEL when set (it replaces
// every agent's own), else the agent's provider spec, "scripted" for a
// scripted model and "custom" for a Go value the program passed.
func (rt *Runtime) ModelSpecs() map[string]string {
	out := map[string]string{}
	for _, def := range rt.App.Agents {
		switch {
		case rt.Config.Model != "":
			out[def.Name] = rt.Config.Model
		case def.Model.Spec != "":
			out[def.Name] = def.Model.Spec
		case def.Model.Script != nil:
			out[def.Name] = "scripted"
		case def.Model.Model != nil:
			out[def.Name] = "custom"
		}
	}
	return out
}
