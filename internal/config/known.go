package config

import (
	"fmt"
	"slices"
	"strings"
)

// CheckEnviron refuses configuration that would be silently ignored: a
// KEEL_* variable in environ (os.Environ's NAME=value form) that no part
// of Keel reads — a misspelling, or a name that moved, whose error says
// where it went. Its error names every such variable, never a value.
// FromEnv checks the values of the variables Keel does read.
//
// Known are the variables FromEnv reads, those of the client commands
// (KEEL_URL, KEEL_TOKEN), and those Keel's own tests and make targets set
// (a keel dev they start inherits them).
func CheckEnviron(environ []string) error {
	known := KnownNames()
	moved := Moved()
	var bad []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "KEEL_") || slices.Contains(known, name) {
			continue
		}
		if to, ok := moved[name]; ok {
			bad = append(bad, fmt.Sprintf("%s is no longer read: it moved to %s", name, to))
		} else {
			bad = append(bad, fmt.Sprintf("%s is not a Keel variable (a misspelling? see docs/configuration.md)", name))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	return fmt.Errorf("unknown configuration: %s; unset it, or Keel would ignore it", strings.Join(bad, "; "))
}

// KnownNames are the KEEL_* variables CheckEnviron accepts, sorted.
func KnownNames() []string {
	names := []string{
		// The client commands' connection (internal/cli).
		"KEEL_URL", "KEEL_TOKEN",
		// Set by Keel's own make targets and tests, inherited by the keel
		// dev, roles and children they start; read by the tests only.
		"KEEL_E2E_LOCALSTACK", "KEEL_ARTIFACT_BUCKET", "KEEL_LOCALSTACK_CONTAINER", "KEEL_LOCALSTACK_HOST_ADDR",
		"KEEL_AWSLOCAL", "KEEL_AWSLOCAL_RIE", "KEEL_AWSLOCAL_PYTHON", "KEEL_AWSLOCAL_CDKOUT", "KEEL_AWSLOCAL_KEEP",
		"KEEL_AWSLOCAL_REBUILD", "KEEL_AWSLOCAL_REBUILD_ARCH", "KEEL_BIN", "KEEL_CDK_TEST_APP",
		"KEEL_CRASH_CHILD", "KEEL_CRASH_DIR", "KEEL_HELPER", "KEEL_LAMBDAERR_CHILD", "KEEL_SQLITE_CHILD",
		"KEEL_SQLITE_CHILD_ID", "KEEL_ARTIFACT_FS_CRASH_CHILD", "KEEL_TEST_CANARY", "KEEL_CANARY_API_KEY",
	}
	// Every variable FromEnv reads, so a new one is known the day it is
	// read.
	_, _ = FromEnv(func(k string) string {
		if strings.HasPrefix(k, "KEEL_") {
			names = append(names, k)
		}
		return ""
	})
	slices.Sort(names)
	return slices.Compact(names)
}

// Moved maps the KEEL_* names Keel once read and no longer does to where
// their setting went.
func Moved() map[string]string {
	const research = " (the research example's own variable since Keel became a library: an agent's settings carry its own prefix)"
	return map[string]string{
		"KEEL_PUBLISH":          "RESEARCH_PUBLISH" + research,
		"KEEL_PUBLISH_CONTRACT": "RESEARCH_PUBLISH_CONTRACT" + research,
		"KEEL_PUBLISH_TIMEOUT":  "RESEARCH_PUBLISH_TIMEOUT" + research,
	}
}
