package agentdef

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/invopop/jsonschema"
)

// SchemaFor reflects the JSON Schema of an arguments struct with
// github.com/invopop/jsonschema, inlined (no $ref, no $defs: every
// provider's tool schema accepts that) and closed (additionalProperties
// false), as the registry validates calls with it.
func SchemaFor[A any]() (json.RawMessage, error) {
	t := reflect.TypeFor[A]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("arguments must be a struct, not %s", t)
	}
	r := &jsonschema.Reflector{DoNotReference: true, Anonymous: true, ExpandedStruct: true}
	s := r.ReflectFromType(t)
	s.Version = "" // the models want the schema, not its meta-schema
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("arguments schema: %w", err)
	}
	return b, nil
}
