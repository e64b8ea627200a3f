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
	fail := func(field, format string, args ...any) error {
		return &LoadError{State: name, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	typ, _ := raw["Type"].(string)
	allowed, ok := allowedFields[typ]
	if !ok {
		return nil, fail("Type", "state type %q is not supported (supported: Task, Choice, Wait, Pass, Succeed, Fail)", raw["Type"])
	}
	st := &State{Name: name, Type: typ}
	for k := range raw {
		if k == "Type" || k == "Comment" {
			continue
		}
		if k == "QueryLanguage" {
			if raw[k] != "JSONPath" {
				return nil, fail(k, "only JSONPath is supported")
			}
			continue
		}
		if !contains(allowed, k) {
			return nil, fail(k, "not supported in a %s state by the local executor", typ)
		}
	}
	var err error
	str := func(field string) (string, bool, error) {
		v, ok := raw[field]
		if !ok {
			return "", false, nil
		}
		s, isStr := v.(string)
		if !isStr {
			return "", true, fail(field, "must be a string")
		}
		return s, true, nil
	}
	path := func(field string, ref, nullable bool) (optPath, error) {
		v, ok := raw[field]
		if !ok {
			return optPath{}, nil
		}
		if v == nil {
			if !nullable {
				return optPath{}, fail(field, "must not be null")
			}
			return optPath{set: true, null: true}, nil
		}
		s, isStr := v.(string)
		if !isStr {
			return optPath{}, fail(field, "must be a path string")
		}
		p, err := ParsePath(s)
		if err != nil {
			return optPath{}, fail(field, "%v", err)
		}
		if ref && (!p.IsReference() || p.Context) {
			return optPath{}, fail(field, "must be a reference path into the state input")
		}
		return optPath{set: true, path: p}, nil
	}
	posInt := func(field string) (int, bool, error) {
		v, ok := raw[field]
		if !ok {
			return 0, false, nil
		}
		n, isNum := v.(json.Number)
		i, err := n.Int64()
		if !isNum || err != nil || i <= 0 || i > maxTimeoutSeconds {
			return 0, true, fail(field, "must be a positive integer")
		}
		return int(i), true, nil
	}
	tmpl := func(field string) (*template, error) {
		v, ok := raw[field]
		if !ok {
			return nil, nil
		}
		if _, isObj := v.(map[string]any); !isObj {
			return nil, fail(field, "must be a JSON object (payload template)")
		}
		t, err := compileTemplate(v)
		if err != nil {
			return nil, fail(field, "%v", err)
		}
		return t, nil
	}

	if typ != "Fail" {
		if st.InputPath, err = path("InputPath", false, true); err != nil {
			return nil, err
		}
		if st.OutputPath, err = path("OutputPath", false, true); err != nil {
			return nil, err
		}
	}
	if typ == "Pass" || typ == "Task" {
		if st.ResultPath, err = path("ResultPath", true, true); err != nil {
			return nil, err
		}
		if st.Parameters, err = tmpl("Parameters"); err != nil {
			return nil, err
		}
	}
	if typ == "Pass" || typ == "Task" || typ == "Wait" {
		next, hasNext, err := str("Next")
		if err != nil {
			return nil, err
		}
		end, hasEnd := raw["End"]
		switch {
		case hasNext && hasEnd:
			return nil, fail("End", "a state has Next or End, not both")
		case hasEnd:
			if end != true {
				return nil, fail("End", "must be true when present")
			}
			st.End = true
		case hasNext:
			st.Next = next
		default:
			return nil, fail("Next", "a %s state needs Next or End", typ)
		}
	}

	switch typ {
	case "Pass":
		st.Result, st.HasResult = raw["Result"]
	case "Task":
		res, ok, err := str("Resource")
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fail("Resource", "is required")
		}
		st.Resource = Integration(res)
		allowedParams, known := integrationParams[st.Resource]
		if !known {
			return nil, fail("Resource", "%q is not supported (supported: lambda:invoke[.waitForTaskToken], ecs:runTask[.waitForTaskToken], states:startExecution)", res)
		}
		if st.Parameters == nil {
			return nil, fail("Parameters", "is required for %s", res)
		}
		for _, k := range st.Parameters.topKeys() {
			if !contains(allowedParams, k) {
				return nil, fail("Parameters", "%q is not a parameter of %s", k, res)
			}
		}
		if st.Resource.waitsForToken() && !st.Parameters.usesPath("$$.Task.Token") {
			return nil, fail("Parameters", "%s must pass $$.Task.Token", res)
		}
		if st.ResultSelector, err = tmpl("ResultSelector"); err != nil {
			return nil, err
		}
		var hasT, hasTP, hasH, hasHP bool
		if st.TimeoutSeconds, hasT, err = posInt("TimeoutSeconds"); err != nil {
			return nil, err
		}
		if st.HeartbeatSeconds, hasH, err = posInt("HeartbeatSeconds"); err != nil {
			return nil, err
		}
		tp, err := path("TimeoutSecondsPath", true, false)
		if err != nil {
			return nil, err
		}
		st.TimeoutSecondsPath, hasTP = tp.path, tp.set
		hp, err := path("HeartbeatSecondsPath", true, false)
		if err != nil {
			return nil, err
		}
		st.HeartbeatSecondsPath, hasHP = hp.path, hp.set
		if hasT && hasTP {
			return nil, fail("TimeoutSecondsPath", "TimeoutSeconds and TimeoutSecondsPath are exclusive")
		}
		if hasH && hasHP {
			return nil, fail("HeartbeatSecondsPath", "HeartbeatSeconds and HeartbeatSecondsPath are exclusive")
		}
		if (hasH || hasHP) && !st.Resource.waitsForToken() {
			return nil, fail("HeartbeatSeconds", "only a .waitForTaskToken task can send heartbeats")
		}
		if hasT && hasH && st.HeartbeatSeconds >= st.TimeoutSeconds {
			return nil, fail("HeartbeatSeconds", "must be smaller than TimeoutSeconds")
		}
		if st.Retry, err = loadRetry(name, raw["Retry"]); err != nil {
			return nil, err
		}
		if st.Catch, err = loadCatch(name, raw["Catch"]); err != nil {
			return nil, err
		}
	case "Choice":
		arr, ok := raw["Choices"].([]any)
		if !ok || len(arr) == 0 {
			return nil, fail("Choices", "must be a non-empty array")
		}
		for i, e := range arr {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fail(fmt.Sprintf("Choices[%d]", i), "must be an object")
			}
			r, err := compileChoiceRule(m, true)
			if err != nil {
				return nil, fail(fmt.Sprintf("Choices[%d]", i), "%v", err)
			}
			st.Choices = append(st.Choices, r)
		}
		if st.Default, _, err = str("Default"); err != nil {
			return nil, err
		}
	case "Wait":
		n := 0
		if v, ok := raw["Seconds"]; ok {
			num, isNum := v.(json.Number)
			i, err := num.Int64()
			if !isNum || err != nil || i < 0 || i > maxTimeoutSeconds {
				return nil, fail("Seconds", "must be a non-negative integer")
			}
			st.Seconds, st.HasSeconds = int(i), true
			n++
		}
		if p, err := path("SecondsPath", true, false); err != nil {
			return nil, err
		} else if p.set {
			st.SecondsPath = p.path
			n++
		}
		if s, ok, err := str("Timestamp"); err != nil {
			return nil, err
		} else if ok {
			t, perr := time.Parse(time.RFC3339Nano, s)
			if perr != nil {
				return nil, fail("Timestamp", "%v", perr)
			}
			st.Timestamp, st.HasTimestamp = t, true
			n++
		}
		if p, err := path("TimestampPath", true, false); err != nil {
			return nil, err
		} else if p.set {
			st.TimestampPath = p.path
			n++
		}
		if n != 1 {
			return nil, fail("Seconds", "a Wait state needs exactly one of Seconds, SecondsPath, Timestamp, TimestampPath")
		}
	case "Fail":
		if st.Error, _, err = str("Error"); err != nil {
			return nil, err
		}
		if st.Cause, _, err = str("Cause"); err != nil {
			return nil, err
		}
		for _, f := range []string{"ErrorPath", "CausePath"} {
			p, err := path(f, true, false)
			if err != nil {
				return nil, err
			}
			if f == "ErrorPath" {
				st.ErrorPath = p.path
			} else {
				st.CausePath = p.path
			}
		}
		if st.Error != "" && st.ErrorPath != nil {
			return nil, fail("ErrorPath", "Error and ErrorPath are exclusive")
		}
		if st.Cause != "" && st.CausePath != nil {
			return nil, fail("CausePath", "Cause and CausePath are exclusive")
		}
	}
	return st, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
