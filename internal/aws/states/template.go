package states

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// errParameterPath is the cause behind States.ParameterPathFailure.
var errParameterPath = errors.New("payload template path cannot be applied")

type tmplKind int

const (
	tmplLiteral tmplKind = iota
	tmplObject
	tmplArray
	tmplPath
	tmplCall
)

// template is a compiled Payload Template (Parameters, ResultSelector).
type template struct {
	kind  tmplKind
	lit   any
	keys  []string
	vals  []*template
	items []*template
	path  *Path
	call  *intrinsic
}

// compileTemplate compiles a payload template value. Fields whose names end
// in ".$" must hold a path ($..., $$...) or an intrinsic function call.
func compileTemplate(v any) (*template, error) {
	switch x := v.(type) {
	case map[string]any:
		t := &template{kind: tmplObject}
		seen := map[string]bool{}
		for _, k := range sortedKeys(x) {
			name := k
			var child *template
			if strings.HasSuffix(k, ".$") {
				name = strings.TrimSuffix(k, ".$")
				s, ok := x[k].(string)
				if !ok {
					return nil, fmt.Errorf("field %q: a .$ field must be a string", k)
				}
				if strings.HasPrefix(s, "$") {
					p, err := ParsePath(s)
					if err != nil {
						return nil, fmt.Errorf("field %q: %w", k, err)
					}
					child = &template{kind: tmplPath, path: p}
				} else {
					c, err := parseIntrinsic(s)
					if err != nil {
						return nil, fmt.Errorf("field %q: %w", k, err)
					}
					child = &template{kind: tmplCall, call: c}
				}
			} else {
				var err error
				if child, err = compileTemplate(x[k]); err != nil {
					return nil, fmt.Errorf("field %q: %w", k, err)
				}
			}
			if seen[name] {
				return nil, fmt.Errorf("duplicate field %q after stripping .$", name)
			}
			seen[name] = true
			t.keys = append(t.keys, name)
			t.vals = append(t.vals, child)
		}
		return t, nil
	case []any:
		t := &template{kind: tmplArray}
		for i, e := range x {
			c, err := compileTemplate(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			t.items = append(t.items, c)
		}
		return t, nil
	default:
		return &template{kind: tmplLiteral, lit: v}, nil
	}
}

// eval produces the payload. Path failures wrap errParameterPath, intrinsic
// failures wrap errIntrinsic.
func (t *template) eval(input, ctxObj any) (any, error) {
	switch t.kind {
	case tmplObject:
		out := make(map[string]any, len(t.keys))
		for i, k := range t.keys {
			v, err := t.vals[i].eval(input, ctxObj)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case tmplArray:
		out := make([]any, len(t.items))
		for i, c := range t.items {
			v, err := c.eval(input, ctxObj)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case tmplPath:
		doc := input
		if t.path.Context {
			doc = ctxObj
		}
		v, err := t.path.Get(doc)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errParameterPath, err)
		}
		return v, nil
	case tmplCall:
		return t.call.eval(input, ctxObj)
	default:
		return t.lit, nil
	}
}

// usesPath reports whether the template references the given path text
// anywhere (used to check that .waitForTaskToken passes $$.Task.Token).
func (t *template) usesPath(raw string) bool {
	switch t.kind {
	case tmplObject:
		for _, v := range t.vals {
			if v.usesPath(raw) {
				return true
			}
		}
	case tmplArray:
		for _, v := range t.items {
			if v.usesPath(raw) {
				return true
			}
		}
	case tmplPath:
		return t.path.Raw == raw
	case tmplCall:
		return t.call.usesPath(raw)
	}
	return false
}

func (c *intrinsic) usesPath(raw string) bool {
	for _, a := range c.args {
		if a.kind == argPath && a.path.Raw == raw || a.kind == argCall && a.call.usesPath(raw) {
			return true
		}
	}
	return false
}

// topKeys returns the payload's top-level field names (after stripping .$).
func (t *template) topKeys() []string {
	return t.keys
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
