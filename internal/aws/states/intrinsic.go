package states

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// errIntrinsic is the cause behind States.IntrinsicFailure.
var errIntrinsic = errors.New("intrinsic function failed")

type argKind int

const (
	argString argKind = iota
	argNumber
	argNull
	argPath
	argCall
)

type intrinsicArg struct {
	kind argKind
	raw  string // string literal with its escapes kept (States.Format needs them)
	num  json.Number
	path *Path
	call *intrinsic
}

// intrinsic is a parsed intrinsic function call such as
// States.Format('{}-g{}', $.run_id, States.MathAdd($.generation, 1)).
type intrinsic struct {
	name string
	args []intrinsicArg
}

// intrinsicArity lists the supported intrinsic functions and their argument
// counts (-1: variadic). Anything else is rejected at load.
var intrinsicArity = map[string][2]int{
	"States.Format":       {1, -1},
	"States.StringToJson": {1, 1},
	"States.JsonToString": {1, 1},
	"States.Array":        {0, -1},
	"States.ArrayLength":  {1, 1},
	"States.ArrayGetItem": {2, 2},
	"States.MathAdd":      {2, 2},
	"States.StringSplit":  {2, 2},
}

func parseIntrinsic(s string) (*intrinsic, error) {
	p := &intrinsicParser{s: s}
	call, err := p.call()
	if err != nil {
		return nil, fmt.Errorf("intrinsic %q: %w", s, err)
	}
	p.ws()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("intrinsic %q: trailing text at %d", s, p.i)
	}
	return call, nil
}

type intrinsicParser struct {
	s string
	i int
}

func (p *intrinsicParser) ws() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *intrinsicParser) call() (*intrinsic, error) {
	start := p.i
	for p.i < len(p.s) && (isAlnum(p.s[p.i]) || p.s[p.i] == '.' || p.s[p.i] == '_') {
		p.i++
	}
	name := p.s[start:p.i]
	if name == "" || p.i >= len(p.s) || p.s[p.i] != '(' {
		return nil, fmt.Errorf("expected a function name followed by ( at %d", start)
	}
	ar, ok := intrinsicArity[name]
	if !ok {
		return nil, fmt.Errorf("unsupported intrinsic function %s", name)
	}
	p.i++
	c := &intrinsic{name: name}
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == ')' {
		p.i++
	} else {
		for {
			p.ws()
			a, err := p.arg()
			if err != nil {
				return nil, err
			}
			c.args = append(c.args, a)
			p.ws()
			if p.i >= len(p.s) {
				return nil, errors.New("unclosed (")
			}
			if p.s[p.i] == ')' {
				p.i++
				break
			}
			if p.s[p.i] != ',' {
				return nil, fmt.Errorf("expected , or ) at %d", p.i)
			}
			p.i++
		}
	}
	if len(c.args) < ar[0] || (ar[1] >= 0 && len(c.args) > ar[1]) {
		return nil, fmt.Errorf("%s takes %d..%d arguments, got %d", name, ar[0], ar[1], len(c.args))
	}
	return c, nil
}

func (p *intrinsicParser) arg() (intrinsicArg, error) {
	if p.i >= len(p.s) {
		return intrinsicArg{}, errors.New("missing argument")
	}
	switch ch := p.s[p.i]; {
	case ch == '\'':
		p.i++
		var b strings.Builder
		for {
			if p.i >= len(p.s) {
				return intrinsicArg{}, errors.New("unterminated string")
			}
			c := p.s[p.i]
			if c == '\\' {
				if p.i+1 >= len(p.s) || !strings.ContainsRune(`'{}\`, rune(p.s[p.i+1])) {
					return intrinsicArg{}, fmt.Errorf("open escape at %d", p.i)
				}
				b.WriteByte(c)
				b.WriteByte(p.s[p.i+1])
				p.i += 2
				continue
			}
			if c == '\'' {
				p.i++
				return intrinsicArg{kind: argString, raw: b.String()}, nil
			}
			b.WriteByte(c)
			p.i++
		}
	case ch == '$':
		start := p.i
		depth := 0
		for p.i < len(p.s) {
			c := p.s[p.i]
			if c == '[' {
				depth++
			} else if c == ']' {
				depth--
			} else if depth == 0 && (c == ',' || c == ')' || c == ' ') {
				break
			}
			p.i++
		}
		path, err := ParsePath(p.s[start:p.i])
		if err != nil {
			return intrinsicArg{}, err
		}
		return intrinsicArg{kind: argPath, path: path}, nil
	case ch == '-' || (ch >= '0' && ch <= '9'):
		start := p.i
		p.i++
		for p.i < len(p.s) && strings.ContainsRune("0123456789.eE+-", rune(p.s[p.i])) {
			p.i++
		}
		n := json.Number(p.s[start:p.i])
		if _, err := n.Float64(); err != nil {
			return intrinsicArg{}, fmt.Errorf("bad number %q", n)
		}
		return intrinsicArg{kind: argNumber, num: n}, nil
	case strings.HasPrefix(p.s[p.i:], "null"):
		p.i += 4
		return intrinsicArg{kind: argNull}, nil
	default:
		c, err := p.call()
		if err != nil {
			return intrinsicArg{}, err
		}
		return intrinsicArg{kind: argCall, call: c}, nil
	}
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// unescape turns an intrinsic string literal's escapes into characters.
func unescape(raw string) string {
	if !strings.Contains(raw, `\`) {
		return raw
	}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		if raw[i] == '\\' && i+1 < len(raw) {
			i++
		}
		b.WriteByte(raw[i])
	}
	return b.String()
}

func (c *intrinsic) eval(input, ctxObj any) (any, error) {
	vals := make([]any, len(c.args))
	for i, a := range c.args {
		switch a.kind {
		case argString:
			vals[i] = unescape(a.raw)
		case argNumber:
			vals[i] = a.num
		case argNull:
			vals[i] = nil
		case argPath:
			doc := input
			if a.path.Context {
				doc = ctxObj
			}
			v, err := a.path.Get(doc)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %v", errIntrinsic, c.name, err)
			}
			vals[i] = v
		case argCall:
			v, err := a.call.eval(input, ctxObj)
			if err != nil {
				return nil, err
			}
			vals[i] = v
		}
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", errIntrinsic, c.name, fmt.Sprintf(format, args...))
	}
	switch c.name {
	case "States.Format":
		tmpl, ok := vals[0].(string)
		if !ok {
			return nil, fail("the template must be a string")
		}
		if c.args[0].kind == argString {
			tmpl = c.args[0].raw // keep escapes so \{ is a literal brace
		} else {
			tmpl = strings.NewReplacer(`\`, `\\`).Replace(tmpl)
		}
		var b strings.Builder
		next := 1
		for i := 0; i < len(tmpl); i++ {
			switch {
			case tmpl[i] == '\\' && i+1 < len(tmpl):
				i++
				b.WriteByte(tmpl[i])
			case tmpl[i] == '{' && i+1 < len(tmpl) && tmpl[i+1] == '}':
				if next >= len(vals) {
					return nil, fail("more {} than arguments")
				}
				s, err := formatArg(vals[next])
				if err != nil {
					return nil, fail("%v", err)
				}
				b.WriteString(s)
				next++
				i++
			default:
				b.WriteByte(tmpl[i])
			}
		}
		if next != len(vals) {
			return nil, fail("more arguments than {}")
		}
		return b.String(), nil
	case "States.StringToJson":
		s, ok := vals[0].(string)
		if !ok {
			return nil, fail("argument must be a string")
		}
		v, err := decodeJSON([]byte(s))
		if err != nil {
			return nil, fail("%v", err)
		}
		return v, nil
	case "States.JsonToString":
		b, err := json.Marshal(vals[0])
		if err != nil {
			return nil, fail("%v", err)
		}
		return string(b), nil
	case "States.Array":
		return append([]any{}, vals...), nil
	case "States.ArrayLength":
		a, ok := vals[0].([]any)
		if !ok {
			return nil, fail("argument must be an array")
		}
		return json.Number(strconv.Itoa(len(a))), nil
	case "States.ArrayGetItem":
		a, ok := vals[0].([]any)
		if !ok {
			return nil, fail("first argument must be an array")
		}
		i, err := toInt(vals[1])
		if err != nil || i < 0 || i >= int64(len(a)) {
			return nil, fail("index out of range")
		}
		return a[i], nil
	case "States.MathAdd":
		a, err1 := toInt(vals[0])
		b, err2 := toInt(vals[1])
		if err1 != nil || err2 != nil {
			return nil, fail("arguments must be integers")
		}
		sum := a + b
		if sum > math.MaxInt32 || sum < math.MinInt32 {
			return nil, fail("result out of range")
		}
		return json.Number(strconv.FormatInt(sum, 10)), nil
	case "States.StringSplit":
		s, ok1 := vals[0].(string)
		d, ok2 := vals[1].(string)
		if !ok1 || !ok2 {
			return nil, fail("arguments must be strings")
		}
		parts := strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(d, r) })
		out := make([]any, len(parts))
		for i, p := range parts {
			out[i] = p
		}
		return out, nil
	}
	return nil, fail("unsupported")
}

func formatArg(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	case nil:
		return "null", nil
	default:
		return "", fmt.Errorf("cannot format a %T", v)
	}
}

func toInt(v any) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, errors.New("not a number")
	}
	if i, err := n.Int64(); err == nil {
		return i, nil
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) {
		return 0, errors.New("not an integer")
	}
	return int64(f), nil
}

// decodeJSON decodes one JSON text, keeping numbers exact.
func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("trailing data after JSON value")
	}
	return v, nil
}
