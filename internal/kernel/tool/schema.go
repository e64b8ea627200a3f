//go:build !keel_no_models

package tool

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// parseJSON reads a schema or a call's arguments as the validator wants
// them (numbers kept exact).
func parseJSON(b json.RawMessage) (any, error) {
	return jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
}

// compileSchema compiles a tool's parsed schema into its validator.
func compileSchema(name string, doc any) (func(doc any) error, error) {
	c := jsonschema.NewCompiler()
	url := "keel:tool/" + name
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("%w: tool %q schema: %w", ErrBadSchema, name, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("%w: tool %q schema: %w", ErrBadSchema, name, err)
	}
	return s.Validate, nil
}
