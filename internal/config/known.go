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
		} else if near := Nearest(name, known); near != "" {
			bad = append(bad, fmt.Sprintf("%s is not a Keel variable (did you mean %s? see docs/configuration.md)", name, near))
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

// Nearest is the name of names closest to name by edit distance, when it
// is close enough to be a misspelling of it (at most 2 edits, and fewer
// than a third of name's length), or "". Ties go to the first in names.
func Nearest(name string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(strings.ToUpper(name), strings.ToUpper(n)); d < bestD && d*3 < len(name) {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
