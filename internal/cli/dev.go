package cli

import (
	"path/filepath"
	"strings"

	"github.com/keelrun/keel/internal/config"
)

// applyStoreFlags sets the store and artifacts from --store and
// --artifacts, when given: a kind alone means its default (sqlite and fs
// under the data directory; dynamo on KEEL_TABLE or "keel", s3 on
// KEEL_BUCKET or "keel-artifacts", at AWS_ENDPOINT_URL).
func applyStoreFlags(cfg *config.Config, st, arts string) error {
	dir := cfg.Defaults().DataDir
	if err := kindFlag("--store", st, "sqlite", filepath.Join(dir, "keel.db"), "dynamo", "keel", &cfg.Store, &cfg.Table); err != nil {
		return err
	}
	return kindFlag("--artifacts", arts, "fs", filepath.Join(dir, "artifacts"), "s3", "keel-artifacts", &cfg.Artifacts, &cfg.Bucket)
}

// kindFlag reads a flag of the form local[:PATH] or cloud[:NAME] into spec
// (KEEL_STORE or KEEL_ARTIFACTS); name is the cloud resource's own
// variable (KEEL_TABLE, KEEL_BUCKET), cleared by a local choice so it no
// longer names the default.
func kindFlag(flag, v, local, localPath, cloud, cloudDefault string, spec, name *string) error {
	kind, arg, _ := strings.Cut(v, ":")
	switch kind {
	case "":
	case local:
		if arg == "" {
			arg = localPath
		}
		*spec, *name = local+":"+arg, ""
	case cloud:
		if arg == "" {
			arg = *name
		}
		if arg == "" {
			arg = cloudDefault
		}
		*spec = cloud + ":" + arg
	default:
		return usagef("%s %q: want %s[:PATH] or %s[:NAME]", flag, v, local, cloud)
	}
	return nil
}

// config reads the one configuration; a bad variable, or a KEEL_* one
// Keel does not read, is a usage error naming it.
func (c *cli) config() (config.Config, error) {
	cfg, err := c.readConfig()
	if err != nil {
		return cfg, &configError{err}
	}
	return cfg, nil
}

// readConfig refuses unknown KEEL_* variables (config.CheckEnviron), then
// reads the configuration (config.FromEnv).
func (c *cli) readConfig() (config.Config, error) {
	if c.environ != nil {
		if err := config.CheckEnviron(c.environ()); err != nil {
			return config.Config{}, err
		}
	}
	return config.FromEnv(c.getenv)
}
