package states

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// errChoiceRuntime is the cause behind a Choice state's States.Runtime
// failure: a Variable (or a ...Path operand) that does not resolve.
var errChoiceRuntime = errors.New("choice rule references an invalid value")

type choiceRule struct {
	variable  *Path
	op        string // e.g. "StringEquals", "NumericLessThanPath", "IsPresent"
	value     any
	valuePath *Path
	and, or   []*choiceRule
	not       *choiceRule
	next      string
}

var comparisonTypes = map[string][]string{
	"String":    {"Equals", "LessThan", "GreaterThan", "LessThanEquals", "GreaterThanEquals", "Matches"},
	"Numeric":   {"Equals", "LessThan", "GreaterThan", "LessThanEquals", "GreaterThanEquals"},
	"Boolean":   {"Equals"},
	"Timestamp": {"Equals", "LessThan", "GreaterThan", "LessThanEquals", "GreaterThanEquals"},
}

var typeTests = map[string]bool{"IsPresent": true, "IsNull": true, "IsString": true, "IsNumeric": true, "IsBoolean": true, "IsTimestamp": true}

func isComparison(op string) bool {
	for typ, cmps := range comparisonTypes {
		for _, c := range cmps {
			if op == typ+c || (c != "Matches" && op == typ+c+"Path") {
				return true
			}
		}
	}
	return typeTests[op]
}

// compileChoiceRules compiles the nested rules of an And or Or (field k);
// apart from compileChoiceRule so that its switch reads one field a case.
func compileChoiceRules(k string, v any) ([]*choiceRule, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, fmt.Errorf("field %q must be a non-empty array of rules", k)
	}
	var rules []*choiceRule
	for i, e := range arr {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("field %q[%d] must be a rule object", k, i)
		}
		sub, err := compileChoiceRule(m, false)
		if err != nil {
			return nil, fmt.Errorf("field %q[%d]: %w", k, i, err)
		}
		rules = append(rules, sub)
	}
	return rules, nil
}

// compileChoiceRule compiles one rule; top says whether it is a member of
// Choices (and so needs Next).
func compileChoiceRule(raw map[string]any, top bool) (*choiceRule, error) {
	r := &choiceRule{}
	var ops []string
	for k, v := range raw {
		switch {
		case k == "Comment":
		case k == "Next":
			if !top {
				return nil, errors.New("field \"Next\" is only allowed in a top-level choice rule")
			}
			s, ok := v.(string)
			if !ok || s == "" {
				return nil, errors.New("field \"Next\" must be a state name")
			}
			r.next = s
		case k == "Variable":
			s, ok := v.(string)
			if !ok {
				return nil, errors.New("field \"Variable\" must be a path")
			}
			p, err := ParsePath(s)
			if err != nil {
				return nil, fmt.Errorf("field \"Variable\": %w", err)
			}
			r.variable = p
		case k == "And" || k == "Or":
			rules, err := compileChoiceRules(k, v)
			if err != nil {
				return nil, err
			}
			if k == "And" {
				r.and = rules
			} else {
				r.or = rules
			}
			ops = append(ops, k)
		case k == "Not":
			m, ok := v.(map[string]any)
			if !ok {
				return nil, errors.New("field \"Not\" must be a rule object")
			}
			sub, err := compileChoiceRule(m, false)
			if err != nil {
				return nil, fmt.Errorf("field \"Not\": %w", err)
			}
			r.not = sub
			ops = append(ops, k)
		case isComparison(k):
			r.op = k
			ops = append(ops, k)
			if err := r.setOperand(k, v); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("field %q is not supported in a choice rule", k)
		}
	}
	if len(ops) != 1 {
		return nil, fmt.Errorf("a choice rule needs exactly one comparison or And/Or/Not, found %v", ops)
	}
	if r.op != "" && r.variable == nil {
		return nil, fmt.Errorf("field \"Variable\" is required with %s", r.op)
	}
	if r.op == "" && r.variable != nil {
		return nil, errors.New("field \"Variable\" is not allowed with And/Or/Not")
	}
	if top && r.next == "" {
		return nil, errors.New("field \"Next\" is required in a top-level choice rule")
	}
	return r, nil
}

func (r *choiceRule) setOperand(op string, v any) error {
	if strings.HasSuffix(op, "Path") {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("field %q must be a path", op)
		}
		p, err := ParsePath(s)
		if err != nil {
			return fmt.Errorf("field %q: %w", op, err)
		}
		r.valuePath = p
		return nil
	}
	bad := fmt.Errorf("field %q has a value of the wrong type", op)
	switch {
	case typeTests[op], strings.HasPrefix(op, "Boolean"):
		if _, ok := v.(bool); !ok {
			return bad
		}
	case strings.HasPrefix(op, "String"):
		if _, ok := v.(string); !ok {
			return bad
		}
	case strings.HasPrefix(op, "Numeric"):
		if _, ok := v.(json.Number); !ok {
			return bad
		}
	case strings.HasPrefix(op, "Timestamp"):
		s, ok := v.(string)
		if !ok {
			return bad
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return fmt.Errorf("field %q: %w", op, err)
		}
	}
	r.value = v
	return nil
}

// eval evaluates the rule against the Choice state's effective input.
func (r *choiceRule) eval(input any) (bool, error) {
	switch {
	case r.and != nil:
		for _, s := range r.and {
			ok, err := s.eval(input)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case r.or != nil:
		for _, s := range r.or {
			ok, err := s.eval(input)
			if err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	case r.not != nil:
		ok, err := r.not.eval(input)
		return !ok, err
	}
	v, err := r.variable.Get(input)
	if r.op == "IsPresent" {
		return (err == nil) == r.value.(bool), nil
	}
	if err != nil {
		return false, fmt.Errorf("%w: %s", errChoiceRuntime, r.variable.Raw)
	}
	if typeTests[r.op] {
		var is bool
		switch r.op {
		case "IsNull":
			is = v == nil
		case "IsString":
			_, is = v.(string)
		case "IsNumeric":
			_, is = v.(json.Number)
		case "IsBoolean":
			_, is = v.(bool)
		case "IsTimestamp":
			s, ok := v.(string)
			is = ok && isTimestamp(s)
		}
		return is == r.value.(bool), nil
	}
	want := r.value
	op := r.op
	if r.valuePath != nil {
		op = strings.TrimSuffix(op, "Path")
		if want, err = r.valuePath.Get(input); err != nil {
			return false, fmt.Errorf("%w: %s", errChoiceRuntime, r.valuePath.Raw)
		}
	}
	return compare(op, v, want), nil
}

func isTimestamp(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

// compare applies a typed comparison; a value of the wrong type compares
// false, as in Step Functions.
func compare(op string, got, want any) bool {
	var c int
	switch {
	case strings.HasPrefix(op, "String"):
		a, ok1 := got.(string)
		b, ok2 := want.(string)
		if !ok1 || !ok2 {
			return false
		}
		if op == "StringMatches" {
			return wildcardMatch(b, a)
		}
		c = strings.Compare(a, b)
	case strings.HasPrefix(op, "Numeric"):
		an, ok1 := got.(json.Number)
		bn, ok2 := want.(json.Number)
		if !ok1 || !ok2 {
			return false
		}
		a, err1 := an.Float64()
		b, err2 := bn.Float64()
		if err1 != nil || err2 != nil {
			return false
		}
		c = cmpFloat(a, b)
	case strings.HasPrefix(op, "Boolean"):
		a, ok1 := got.(bool)
		b, ok2 := want.(bool)
		return ok1 && ok2 && a == b
	case strings.HasPrefix(op, "Timestamp"):
		as, ok1 := got.(string)
		bs, ok2 := want.(string)
		if !ok1 || !ok2 {
			return false
		}
		a, err1 := time.Parse(time.RFC3339Nano, as)
		b, err2 := time.Parse(time.RFC3339Nano, bs)
		if err1 != nil || err2 != nil {
			return false
		}
		c = a.Compare(b)
	default:
		return false
	}
	switch {
	case strings.HasSuffix(op, "GreaterThanEquals"):
		return c >= 0
	case strings.HasSuffix(op, "LessThanEquals"):
		return c <= 0
	case strings.HasSuffix(op, "GreaterThan"):
		return c > 0
	case strings.HasSuffix(op, "LessThan"):
		return c < 0
	default: // Equals
		return c == 0
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// wildcardMatch implements StringMatches: * matches any run of characters,
// \* and \\ are literal.
func wildcardMatch(pattern, s string) bool {
	type tok struct {
		star bool
		ch   byte
	}
	var toks []tok
	for i := 0; i < len(pattern); i++ {
		switch {
		case pattern[i] == '\\' && i+1 < len(pattern):
			i++
			toks = append(toks, tok{ch: pattern[i]})
		case pattern[i] == '*':
			toks = append(toks, tok{star: true})
		default:
			toks = append(toks, tok{ch: pattern[i]})
		}
	}
	// Classic two-pointer glob match with backtracking to the last star.
	ti, si, starT, starS := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case ti < len(toks) && !toks[ti].star && toks[ti].ch == s[si]:
			ti++
			si++
		case ti < len(toks) && toks[ti].star:
			starT, starS = ti, si
			ti++
		case starT >= 0:
			ti = starT + 1
			starS++
			si = starS
		default:
			return false
		}
	}
	for ti < len(toks) && toks[ti].star {
		ti++
	}
	return ti == len(toks)
}
