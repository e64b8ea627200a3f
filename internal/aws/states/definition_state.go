// Decoding one state of a definition and checking its fields.

package states

import (
	"encoding/json"
	"fmt"
	"time"
)

func fieldOr(field, k string) string {
	if field == "" {
		return k
	}
	return field
}

func loadState(name string, raw map[string]any) (*State, error) {
	d := stateDecoder{name: name, raw: raw}
	typ, _ := raw["Type"].(string)
	if err := d.checkFields(typ); err != nil {
		return nil, err
	}
	st := &State{Name: name, Type: typ}
	if err := d.common(st); err != nil {
		return nil, err
	}
	var err error
	switch typ {
	case "Pass":
		st.Result, st.HasResult = raw["Result"]
	case "Task":
		err = d.task(st)
	case "Choice":
		err = d.choice(st)
	case "Wait":
		err = d.wait(st)
	case "Fail":
		err = d.failState(st)
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

// stateDecoder reads the fields of one state's JSON object, each error a
// LoadError naming the state and the field.
type stateDecoder struct {
	name string
	raw  map[string]any
}

func (d stateDecoder) fail(field, format string, args ...any) error {
	return &LoadError{State: d.name, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// checkFields refuses an unsupported type, and a field the type does not
// take or the local executor does not implement.
func (d stateDecoder) checkFields(typ string) error {
	allowed, ok := allowedFields[typ]
	if !ok {
		return d.fail("Type", "state type %q is not supported (supported: Task, Choice, Wait, Pass, Succeed, Fail)", d.raw["Type"])
	}
	for k := range d.raw {
		if k == "Type" || k == "Comment" {
			continue
		}
		if k == "QueryLanguage" {
			if d.raw[k] != "JSONPath" {
				return d.fail(k, "only JSONPath is supported")
			}
			continue
		}
		if !contains(allowed, k) {
			return d.fail(k, "not supported in a %s state by the local executor", typ)
		}
	}
	return nil
}

func (d stateDecoder) str(field string) (string, bool, error) {
	v, ok := d.raw[field]
	if !ok {
		return "", false, nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", true, d.fail(field, "must be a string")
	}
	return s, true, nil
}

func (d stateDecoder) path(field string, ref, nullable bool) (optPath, error) {
	v, ok := d.raw[field]
	if !ok {
		return optPath{}, nil
	}
	if v == nil {
		if !nullable {
			return optPath{}, d.fail(field, "must not be null")
		}
		return optPath{set: true, null: true}, nil
	}
	s, isStr := v.(string)
	if !isStr {
		return optPath{}, d.fail(field, "must be a path string")
	}
	p, err := ParsePath(s)
	if err != nil {
		return optPath{}, d.fail(field, "%v", err)
	}
	if ref && (!p.IsReference() || p.Context) {
		return optPath{}, d.fail(field, "must be a reference path into the state input")
	}
	return optPath{set: true, path: p}, nil
}

func (d stateDecoder) posInt(field string) (int, bool, error) {
	v, ok := d.raw[field]
	if !ok {
		return 0, false, nil
	}
	n, isNum := v.(json.Number)
	i, err := n.Int64()
	if !isNum || err != nil || i <= 0 || i > maxTimeoutSeconds {
		return 0, true, d.fail(field, "must be a positive integer")
	}
	return int(i), true, nil
}

func (d stateDecoder) tmpl(field string) (*template, error) {
	v, ok := d.raw[field]
	if !ok {
		return nil, nil
	}
	if _, isObj := v.(map[string]any); !isObj {
		return nil, d.fail(field, "must be a JSON object (payload template)")
	}
	t, err := compileTemplate(v)
	if err != nil {
		return nil, d.fail(field, "%v", err)
	}
	return t, nil
}

// common decodes the fields several types share: the paths, Parameters,
// and Next or End.
func (d stateDecoder) common(st *State) error {
	var err error
	typ := st.Type
	if typ != "Fail" {
		if st.InputPath, err = d.path("InputPath", false, true); err != nil {
			return err
		}
		if st.OutputPath, err = d.path("OutputPath", false, true); err != nil {
			return err
		}
	}
	if typ == "Pass" || typ == "Task" {
		if st.ResultPath, err = d.path("ResultPath", true, true); err != nil {
			return err
		}
		if st.Parameters, err = d.tmpl("Parameters"); err != nil {
			return err
		}
	}
	if typ != "Pass" && typ != "Task" && typ != "Wait" {
		return nil
	}
	next, hasNext, err := d.str("Next")
	if err != nil {
		return err
	}
	end, hasEnd := d.raw["End"]
	switch {
	case hasNext && hasEnd:
		return d.fail("End", "a state has Next or End, not both")
	case hasEnd:
		if end != true {
			return d.fail("End", "must be true when present")
		}
		st.End = true
	case hasNext:
		st.Next = next
	default:
		return d.fail("Next", "a %s state needs Next or End", typ)
	}
	return nil
}

// task decodes a Task state: its integration, its parameters checked
// against it, timeouts, heartbeats, Retry and Catch.
func (d stateDecoder) task(st *State) error {
	res, ok, err := d.str("Resource")
	if err != nil {
		return err
	}
	if !ok {
		return d.fail("Resource", "is required")
	}
	st.Resource = Integration(res)
	allowedParams, known := integrationParams[st.Resource]
	if !known {
		return d.fail("Resource", "%q is not supported (supported: lambda:invoke[.waitForTaskToken], ecs:runTask[.waitForTaskToken], states:startExecution)", res)
	}
	if st.Parameters == nil {
		return d.fail("Parameters", "is required for %s", res)
	}
	for _, k := range st.Parameters.topKeys() {
		if !contains(allowedParams, k) {
			return d.fail("Parameters", "%q is not a parameter of %s", k, res)
		}
	}
	if st.Resource.waitsForToken() && !st.Parameters.usesPath("$$.Task.Token") {
		return d.fail("Parameters", "%s must pass $$.Task.Token", res)
	}
	if st.ResultSelector, err = d.tmpl("ResultSelector"); err != nil {
		return err
	}
	if err := d.timeouts(st); err != nil {
		return err
	}
	if st.Retry, err = loadRetry(d.name, d.raw["Retry"]); err != nil {
		return err
	}
	st.Catch, err = loadCatch(d.name, d.raw["Catch"])
	return err
}

// timeouts decodes a Task's TimeoutSeconds[Path] and
// HeartbeatSeconds[Path], each pair exclusive.
func (d stateDecoder) timeouts(st *State) error {
	var hasT, hasTP, hasH, hasHP bool
	var err error
	if st.TimeoutSeconds, hasT, err = d.posInt("TimeoutSeconds"); err != nil {
		return err
	}
	if st.HeartbeatSeconds, hasH, err = d.posInt("HeartbeatSeconds"); err != nil {
		return err
	}
	tp, err := d.path("TimeoutSecondsPath", true, false)
	if err != nil {
		return err
	}
	st.TimeoutSecondsPath, hasTP = tp.path, tp.set
	hp, err := d.path("HeartbeatSecondsPath", true, false)
	if err != nil {
		return err
	}
	st.HeartbeatSecondsPath, hasHP = hp.path, hp.set
	switch {
	case hasT && hasTP:
		return d.fail("TimeoutSecondsPath", "TimeoutSeconds and TimeoutSecondsPath are exclusive")
	case hasH && hasHP:
		return d.fail("HeartbeatSecondsPath", "HeartbeatSeconds and HeartbeatSecondsPath are exclusive")
	case (hasH || hasHP) && !st.Resource.waitsForToken():
		return d.fail("HeartbeatSeconds", "only a .waitForTaskToken task can send heartbeats")
	case hasT && hasH && st.HeartbeatSeconds >= st.TimeoutSeconds:
		return d.fail("HeartbeatSeconds", "must be smaller than TimeoutSeconds")
	}
	return nil
}

func (d stateDecoder) choice(st *State) error {
	arr, ok := d.raw["Choices"].([]any)
	if !ok || len(arr) == 0 {
		return d.fail("Choices", "must be a non-empty array")
	}
	for i, e := range arr {
		m, ok := e.(map[string]any)
		if !ok {
			return d.fail(fmt.Sprintf("Choices[%d]", i), "must be an object")
		}
		r, err := compileChoiceRule(m, true)
		if err != nil {
			return d.fail(fmt.Sprintf("Choices[%d]", i), "%v", err)
		}
		st.Choices = append(st.Choices, r)
	}
	var err error
	st.Default, _, err = d.str("Default")
	return err
}

// wait decodes a Wait state's one duration or time field.
func (d stateDecoder) wait(st *State) error {
	n := 0
	if v, ok := d.raw["Seconds"]; ok {
		num, isNum := v.(json.Number)
		i, err := num.Int64()
		if !isNum || err != nil || i < 0 || i > maxTimeoutSeconds {
			return d.fail("Seconds", "must be a non-negative integer")
		}
		st.Seconds, st.HasSeconds = int(i), true
		n++
	}
	if p, err := d.path("SecondsPath", true, false); err != nil {
		return err
	} else if p.set {
		st.SecondsPath = p.path
		n++
	}
	if s, ok, err := d.str("Timestamp"); err != nil {
		return err
	} else if ok {
		t, perr := time.Parse(time.RFC3339Nano, s)
		if perr != nil {
			return d.fail("Timestamp", "%v", perr)
		}
		st.Timestamp, st.HasTimestamp = t, true
		n++
	}
	if p, err := d.path("TimestampPath", true, false); err != nil {
		return err
	} else if p.set {
		st.TimestampPath = p.path
		n++
	}
	if n != 1 {
		return d.fail("Seconds", "a Wait state needs exactly one of Seconds, SecondsPath, Timestamp, TimestampPath")
	}
	return nil
}

func (d stateDecoder) failState(st *State) error {
	var err error
	if st.Error, _, err = d.str("Error"); err != nil {
		return err
	}
	if st.Cause, _, err = d.str("Cause"); err != nil {
		return err
	}
	ep, err := d.path("ErrorPath", true, false)
	if err != nil {
		return err
	}
	cp, err := d.path("CausePath", true, false)
	if err != nil {
		return err
	}
	st.ErrorPath, st.CausePath = ep.path, cp.path
	if st.Error != "" && st.ErrorPath != nil {
		return d.fail("ErrorPath", "Error and ErrorPath are exclusive")
	}
	if st.Cause != "" && st.CausePath != nil {
		return d.fail("CausePath", "Cause and CausePath are exclusive")
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
