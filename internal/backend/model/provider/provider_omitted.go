//go:build keel_no_anthropic || keel_no_openai || keel_no_bedrock || keel_no_models

package provider

import "fmt"

// errOmitted is what a provider left out of this build by its tag answers:
// the spec names a provider the program can no longer reach, and the
// message says how to get it back. keel_no_models (the capability tag
// of the roles that call no model) leaves every provider out too.
func errOmitted(name, tag string) error {
	return fmt.Errorf("model provider %q is not in this build (it was built with -tags %s, or with keel_no_models, as the roles that call no model are); rebuild without that tag", name, tag)
}
