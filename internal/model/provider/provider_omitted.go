//go:build keel_no_anthropic || keel_no_openai || keel_no_bedrock || keel_role_api || keel_role_approval || keel_role_finalize || keel_role_schedule || keel_role_sweep

package provider

import "fmt"

// errOmitted is what a provider left out of this build by its tag answers:
// the spec names a provider the program can no longer reach, and the
// message says how to get it back. A role tag of a role that calls no
// model (keel_role_api, _approval, _finalize, _schedule, _sweep) leaves
// every provider out too.
func errOmitted(name, tag string) error {
	return fmt.Errorf("model provider %q is not in this build (it was built with -tags %s, or with the tag of a role that calls no model); rebuild without that tag", name, tag)
}
