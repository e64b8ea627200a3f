//go:build keel_no_models

package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// A build that runs no tool call (-tags keel_no_models: the api,
// approval, finalize, schedule and sweep roles) does not link the JSON Schema
// validator: the package's initialiser compiles every draft's
// meta-schema, 8 ms of each cold start, and it brings 0.5 MB. Such a
// role builds its agents' registries (NewLazyRegistry) for their names
// and never validates; were it to, Validate says why it cannot.

// parseJSON reads a schema or a call's arguments, one JSON value with
// nothing after it (as the validator's own reader does).
func parseJSON(b json.RawMessage) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("invalid character after top-level value")
	}
	return v, nil
}

func compileSchema(name string, _ any) (func(doc any) error, error) {
	return nil, fmt.Errorf("tool %q: this build validates no tool call (built with keel_no_models)", name)
}
