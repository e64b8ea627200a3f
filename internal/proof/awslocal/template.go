package awslocal

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Template is a synthesized CloudFormation template (cdk.out).
type Template struct {
	Dir       string
	Resources map[string]Resource
}

// Resource is one resource of the template.
type Resource struct {
	Type       string         `json:"Type"`
	Properties map[string]any `json:"Properties"`
}

// LoadTemplate reads the one stack template in a cdk.out directory.
func LoadTemplate(dir string) (*Template, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*.template.json"))
	if err != nil {
		return nil, err
	}
	if len(matches) != 1 {
		return nil, fmt.Errorf("awslocal: want one *.template.json in %s, found %d (run make synth)", dir, len(matches))
	}
	raw, err := os.ReadFile(matches[0])
	if err != nil {
		return nil, err
	}
	t := &Template{Dir: dir}
	if err := json.Unmarshal(raw, t); err != nil {
		return nil, fmt.Errorf("awslocal: %s: %w", matches[0], err)
	}
	return t, nil
}

// Only returns the logical id of the one resource of type typ whose id
// starts with prefix (CDK's logical ids are construct path plus a hash).
func (t *Template) Only(typ, prefix string) (string, error) {
	var ids []string
	for id, r := range t.Resources {
		if r.Type == typ && strings.HasPrefix(id, prefix) {
			ids = append(ids, id)
		}
	}
	if len(ids) != 1 {
		sort.Strings(ids)
		return "", fmt.Errorf("awslocal: want one %s named %s*, found %v", typ, prefix, ids)
	}
	return ids[0], nil
}

// Definition reads a state machine's definition: its DefinitionS3Location
// is a file asset of cdk.out (asset.<hash>.json), uploaded unchanged.
func (t *Template) Definition(id string) ([]byte, error) {
	loc, _ := t.Resources[id].Properties["DefinitionS3Location"].(map[string]any)
	key, _ := loc["Key"].(string)
	if key == "" {
		return nil, fmt.Errorf("awslocal: %s has no DefinitionS3Location.Key", id)
	}
	return os.ReadFile(filepath.Join(t.Dir, "asset."+key))
}

// Physical are the physical ids and attributes of the deployed resources,
// the values Ref and Fn::GetAtt resolve to.
type Physical struct {
	Region, Account string
	Refs            map[string]string            // logical id → Ref value
	Attrs           map[string]map[string]string // logical id → attribute → value
}

// Resolve evaluates the intrinsic functions of a template value as
// CloudFormation does: Ref (resources and AWS:: pseudo parameters),
// Fn::GetAtt, Fn::Join and Fn::Sub. A resource without a physical id is an
// error that names it, never an empty string.
func (p *Physical) Resolve(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				switch k {
				case "Ref":
					return p.ref(arg)
				case "Fn::GetAtt":
					return p.getAtt(arg)
				case "Fn::Join":
					return p.join(arg)
				case "Fn::Sub":
					return p.sub(arg)
				}
			}
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := p.Resolve(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := p.Resolve(e)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// String resolves v and requires a string.
func (p *Physical) String(v any) (string, error) {
	r, err := p.Resolve(v)
	if err != nil {
		return "", err
	}
	s, ok := r.(string)
	if !ok {
		return "", fmt.Errorf("awslocal: %v resolves to %T, want a string", v, r)
	}
	return s, nil
}

func (p *Physical) ref(arg any) (string, error) {
	name, _ := arg.(string)
	switch name {
	case "AWS::Region":
		return p.Region, nil
	case "AWS::AccountId":
		return p.Account, nil
	case "AWS::Partition":
		return "aws", nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	}
	if v, ok := p.Refs[name]; ok {
		return v, nil
	}
	return "", fmt.Errorf("awslocal: Ref %q: no physical id", name)
}

func (p *Physical) getAtt(arg any) (string, error) {
	var id, attr string
	switch a := arg.(type) {
	case []any:
		if len(a) == 2 {
			id, _ = a[0].(string)
			attr, _ = a[1].(string)
		}
	case string:
		id, attr, _ = strings.Cut(a, ".")
	}
	if v, ok := p.Attrs[id][attr]; ok {
		return v, nil
	}
	return "", fmt.Errorf("awslocal: Fn::GetAtt %s.%s: not deployed", id, attr)
}

func (p *Physical) join(arg any) (string, error) {
	a, ok := arg.([]any)
	if !ok || len(a) != 2 {
		return "", errors.New("awslocal: Fn::Join wants [delimiter, [values]]")
	}
	delim, _ := a[0].(string)
	list, err := p.Resolve(a[1])
	if err != nil {
		return "", err
	}
	items, ok := list.([]any)
	if !ok {
		return "", errors.New("awslocal: Fn::Join values are not a list")
	}
	parts := make([]string, len(items))
	for i, it := range items {
		s, ok := it.(string)
		if !ok {
			return "", fmt.Errorf("awslocal: Fn::Join value %d is %T", i, it)
		}
		parts[i] = s
	}
	return strings.Join(parts, delim), nil
}

var subVar = regexp.MustCompile(`\$\{([^}!][^}]*)\}`)

func (p *Physical) sub(arg any) (string, error) {
	var tmpl string
	vars := map[string]any{}
	switch a := arg.(type) {
	case string:
		tmpl = a
	case []any:
		if len(a) != 2 {
			return "", errors.New("awslocal: Fn::Sub wants a string or [string, {vars}]")
		}
		tmpl, _ = a[0].(string)
		vars, _ = a[1].(map[string]any)
	}
	var firstErr error
	out := subVar.ReplaceAllStringFunc(tmpl, func(m string) string {
		name := m[2 : len(m)-1]
		var s string
		var err error
		if v, ok := vars[name]; ok {
			s, err = p.String(v)
		} else if id, attr, dotted := strings.Cut(name, "."); dotted {
			s, err = p.getAtt([]any{id, attr})
		} else {
			s, err = p.ref(name)
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return s
	})
	return out, firstErr
}
