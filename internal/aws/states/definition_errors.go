package states

import (
	"encoding/json"
	"fmt"
)

// Loading the error handling of a Task state: its Retry and Catch fields.

func loadErrorEquals(state, field string, v any) ([]string, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, &LoadError{State: state, Field: field, Msg: "must be a non-empty array of error names"}
	}
	var out []string
	for _, e := range arr {
		s, ok := e.(string)
		if !ok || s == "" {
			return nil, &LoadError{State: state, Field: field, Msg: "error names must be strings"}
		}
		out = append(out, s)
	}
	if contains(out, ErrALL) && len(out) != 1 {
		return nil, &LoadError{State: state, Field: field, Msg: "States.ALL must appear alone"}
	}
	return out, nil
}

func loadRetry(state string, v any) ([]Retrier, error) {
	if v == nil {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, &LoadError{State: state, Field: "Retry", Msg: "must be an array"}
	}
	var out []Retrier
	for i, e := range arr {
		field := fmt.Sprintf("Retry[%d]", i)
		m, ok := e.(map[string]any)
		if !ok {
			return nil, &LoadError{State: state, Field: field, Msg: "must be an object"}
		}
		r := Retrier{IntervalSeconds: 1, MaxAttempts: 3, BackoffRate: 2.0, JitterStrategy: "NONE"}
		for k, val := range m {
			f := field + "." + k
			bad := &LoadError{State: state, Field: f, Msg: "invalid value"}
			num, isNum := val.(json.Number)
			switch k {
			case "ErrorEquals":
				ee, err := loadErrorEquals(state, f, val)
				if err != nil {
					return nil, err
				}
				r.ErrorEquals = ee
			case "IntervalSeconds", "MaxAttempts", "MaxDelaySeconds":
				n, err := num.Int64()
				if !isNum || err != nil || n < 0 || n > maxTimeoutSeconds || (n == 0 && k != "MaxAttempts") {
					return nil, bad
				}
				switch k {
				case "IntervalSeconds":
					r.IntervalSeconds = int(n)
				case "MaxAttempts":
					r.MaxAttempts = int(n)
				default:
					r.MaxDelaySeconds = int(n)
				}
			case "BackoffRate":
				f, err := num.Float64()
				if !isNum || err != nil || f < 1.0 {
					return nil, &LoadError{State: state, Field: field + ".BackoffRate", Msg: "must be a number >= 1.0"}
				}
				r.BackoffRate = f
			case "JitterStrategy":
				if val != "FULL" && val != "NONE" {
					return nil, &LoadError{State: state, Field: f, Msg: "must be FULL or NONE"}
				}
				r.JitterStrategy = val.(string)
			case "Comment":
			default:
				return nil, &LoadError{State: state, Field: f, Msg: "not supported in a retrier"}
			}
		}
		if r.ErrorEquals == nil {
			return nil, &LoadError{State: state, Field: field + ".ErrorEquals", Msg: "is required"}
		}
		if contains(r.ErrorEquals, ErrALL) && i != len(arr)-1 {
			return nil, &LoadError{State: state, Field: field + ".ErrorEquals", Msg: "States.ALL must be in the last retrier"}
		}
		out = append(out, r)
	}
	return out, nil
}

func loadCatch(state string, v any) ([]Catcher, error) {
	if v == nil {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, &LoadError{State: state, Field: "Catch", Msg: "must be an array"}
	}
	var out []Catcher
	for i, e := range arr {
		field := fmt.Sprintf("Catch[%d]", i)
		m, ok := e.(map[string]any)
		if !ok {
			return nil, &LoadError{State: state, Field: field, Msg: "must be an object"}
		}
		var c Catcher
		for k, val := range m {
			f := field + "." + k
			switch k {
			case "ErrorEquals":
				ee, err := loadErrorEquals(state, f, val)
				if err != nil {
					return nil, err
				}
				c.ErrorEquals = ee
			case "Next":
				s, ok := val.(string)
				if !ok {
					return nil, &LoadError{State: state, Field: f, Msg: "must be a state name"}
				}
				c.Next = s
			case "ResultPath":
				if val == nil {
					c.ResultPath = optPath{set: true, null: true}
					continue
				}
				s, ok := val.(string)
				if !ok {
					return nil, &LoadError{State: state, Field: f, Msg: "must be a path"}
				}
				p, err := ParsePath(s)
				if err != nil || !p.IsReference() || p.Context {
					return nil, &LoadError{State: state, Field: f, Msg: "must be a reference path into the state input"}
				}
				c.ResultPath = optPath{set: true, path: p}
			case "Comment":
			default:
				return nil, &LoadError{State: state, Field: f, Msg: "not supported in a catcher"}
			}
		}
		if c.ErrorEquals == nil || c.Next == "" {
			return nil, &LoadError{State: state, Field: field, Msg: "a catcher needs ErrorEquals and Next"}
		}
		if contains(c.ErrorEquals, ErrALL) && i != len(arr)-1 {
			return nil, &LoadError{State: state, Field: field + ".ErrorEquals", Msg: "States.ALL must be in the last catcher"}
		}
		out = append(out, c)
	}
	return out, nil
}
