package states

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// errPathNotFound is returned by Path.Get when a definite path does not
// resolve to a node in the document.
var errPathNotFound = errors.New("path does not match the input")

type segKind int

const (
	segField segKind = iota
	segIndex
	segSlice
	segWildcard
)

type segment struct {
	kind     segKind
	name     string
	idx      int
	start    int
	end      int
	hasStart bool
	hasEnd   bool
}

// Path is a parsed JSONPath in the subset Keel uses: $, .field, ['field'],
// [n] (negative n counts from the end), [a:b] slices and [*] / .* wildcards.
// A path that begins with $$ applies to the context object.
type Path struct {
	Raw     string
	Context bool
	segs    []segment
}

// ParsePath parses a JSONPath in the supported subset.
func ParsePath(s string) (*Path, error) {
	p := &Path{Raw: s}
	if strings.HasPrefix(s, "$$") {
		p.Context = true
		s = s[1:]
	}
	if !strings.HasPrefix(s, "$") {
		return nil, fmt.Errorf("path %q must begin with $", p.Raw)
	}
	i := 1
	for i < len(s) {
		switch s[i] {
		case '.':
			i++
			if i < len(s) && s[i] == '*' {
				p.segs = append(p.segs, segment{kind: segWildcard})
				i++
				continue
			}
			start := i
			for i < len(s) && s[i] != '.' && s[i] != '[' {
				if strings.ContainsRune("@,:?()'\" ", rune(s[i])) {
					return nil, fmt.Errorf("path %q: unsupported character %q", p.Raw, s[i])
				}
				i++
			}
			if i == start {
				return nil, fmt.Errorf("path %q: empty field name", p.Raw)
			}
			p.segs = append(p.segs, segment{kind: segField, name: s[start:i]})
		case '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("path %q: unclosed [", p.Raw)
			}
			body := strings.TrimSpace(s[i+1 : i+end])
			i += end + 1
			seg, err := parseBracket(body)
			if err != nil {
				return nil, fmt.Errorf("path %q: %w", p.Raw, err)
			}
			p.segs = append(p.segs, seg)
		default:
			return nil, fmt.Errorf("path %q: unexpected %q at %d", p.Raw, s[i], i)
		}
	}
	return p, nil
}

func parseBracket(body string) (segment, error) {
	switch {
	case body == "*":
		return segment{kind: segWildcard}, nil
	case len(body) >= 2 && (body[0] == '\'' && body[len(body)-1] == '\'' || body[0] == '"' && body[len(body)-1] == '"'):
		return segment{kind: segField, name: body[1 : len(body)-1]}, nil
	case strings.Contains(body, ":"):
		parts := strings.Split(body, ":")
		if len(parts) != 2 {
			return segment{}, fmt.Errorf("unsupported slice [%s]", body)
		}
		seg := segment{kind: segSlice}
		if a := strings.TrimSpace(parts[0]); a != "" {
			n, err := strconv.Atoi(a)
			if err != nil {
				return segment{}, fmt.Errorf("bad slice start %q", a)
			}
			seg.start, seg.hasStart = n, true
		}
		if b := strings.TrimSpace(parts[1]); b != "" {
			n, err := strconv.Atoi(b)
			if err != nil {
				return segment{}, fmt.Errorf("bad slice end %q", b)
			}
			seg.end, seg.hasEnd = n, true
		}
		return seg, nil
	default:
		n, err := strconv.Atoi(body)
		if err != nil {
			return segment{}, fmt.Errorf("unsupported subscript [%s]", body)
		}
		return segment{kind: segIndex, idx: n}, nil
	}
}

// IsReference reports whether p is a Reference Path: it names exactly one
// node (no slices, wildcards or negative indexes).
func (p *Path) IsReference() bool {
	for _, s := range p.segs {
		if s.kind == segSlice || s.kind == segWildcard || (s.kind == segIndex && s.idx < 0) {
			return false
		}
	}
	return true
}

// Get applies the path to doc. A definite path that does not match returns
// errPathNotFound; a path with slices or wildcards gathers its matches into
// an array, as the specification requires.
func (p *Path) Get(doc any) (any, error) {
	nodes := []any{doc}
	multi := false
	for _, s := range p.segs {
		var next []any
		for _, n := range nodes {
			switch s.kind {
			case segField:
				m, ok := n.(map[string]any)
				if !ok {
					continue
				}
				v, ok := m[s.name]
				if !ok {
					continue
				}
				next = append(next, v)
			case segIndex:
				a, ok := n.([]any)
				if !ok {
					continue
				}
				i := s.idx
				if i < 0 {
					i += len(a)
				}
				if i < 0 || i >= len(a) {
					continue
				}
				next = append(next, a[i])
			case segSlice:
				multi = true
				a, ok := n.([]any)
				if !ok {
					continue
				}
				lo, hi := 0, len(a)
				if s.hasStart {
					lo = clampIndex(s.start, len(a))
				}
				if s.hasEnd {
					hi = clampIndex(s.end, len(a))
				}
				for i := lo; i < hi; i++ {
					next = append(next, a[i])
				}
			case segWildcard:
				multi = true
				switch v := n.(type) {
				case []any:
					next = append(next, v...)
				case map[string]any:
					for _, k := range sortedKeys(v) {
						next = append(next, v[k])
					}
				}
			}
		}
		nodes = next
		if !multi && len(nodes) == 0 {
			return nil, fmt.Errorf("%w: %s", errPathNotFound, p.Raw)
		}
	}
	if multi {
		if nodes == nil {
			nodes = []any{}
		}
		return nodes, nil
	}
	return nodes[0], nil
}

func clampIndex(i, n int) int {
	if i < 0 {
		i += n
	}
	if i < 0 {
		return 0
	}
	if i > n {
		return n
	}
	return i
}

// errResultPath is the cause behind States.ResultPathMatchFailure.
var errResultPath = errors.New("result path cannot be applied to the input")

// Set returns a copy of doc with val placed at the reference path p,
// creating intermediate objects as needed. The input document is not
// modified: maps along the path are copied.
func (p *Path) Set(doc, val any) (any, error) {
	return setAt(doc, p.segs, val)
}

func setAt(node any, segs []segment, val any) (any, error) {
	if len(segs) == 0 {
		return val, nil
	}
	s := segs[0]
	switch s.kind {
	case segField:
		var m map[string]any
		switch v := node.(type) {
		case map[string]any:
			m = make(map[string]any, len(v)+1)
			for k, x := range v {
				m[k] = x
			}
		case nil:
			// An absent field (or JSON null) becomes a new object.
			m = map[string]any{}
		default:
			return nil, fmt.Errorf("%w: %q is not an object", errResultPath, s.name)
		}
		nv, err := setAt(m[s.name], segs[1:], val)
		if err != nil {
			return nil, err
		}
		m[s.name] = nv
		return m, nil
	case segIndex:
		a, ok := node.([]any)
		if !ok || s.idx < 0 || s.idx >= len(a) {
			return nil, fmt.Errorf("%w: index %d", errResultPath, s.idx)
		}
		c := append([]any(nil), a...)
		nv, err := setAt(c[s.idx], segs[1:], val)
		if err != nil {
			return nil, err
		}
		c[s.idx] = nv
		return c, nil
	default:
		return nil, fmt.Errorf("%w: not a reference path", errResultPath)
	}
}
