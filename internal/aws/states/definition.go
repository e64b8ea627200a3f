package states

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// LoadError says which state and field of a definition is invalid or
// outside the supported subset.
type LoadError struct {
	State string // empty for a top-level field
	Field string
	Msg   string
}

func (e *LoadError) Error() string {
	if e.State == "" {
		return fmt.Sprintf("states: definition field %q: %s", e.Field, e.Msg)
	}
	return fmt.Sprintf("states: state %q, field %q: %s", e.State, e.Field, e.Msg)
}

// optPath is a path field that may be absent, null, or a path.
type optPath struct {
	set  bool
	null bool
	path *Path
}

// Machine is a loaded, validated state machine definition.
type Machine struct {
	StartAt string
	States  map[string]*State
	// Definition is the definition text after substitution; it is what an
	// execution stores so that it resumes with the definition it began with.
	Definition []byte
}

// Integration identifies a Task resource of the supported subset.
type Integration string

// The Task resources the executor runs.
const (
	LambdaInvoke          Integration = "arn:aws:states:::lambda:invoke"
	LambdaInvokeWithToken Integration = "arn:aws:states:::lambda:invoke.waitForTaskToken"
	ECSRunTask            Integration = "arn:aws:states:::ecs:runTask"
	ECSRunTaskWithToken   Integration = "arn:aws:states:::ecs:runTask.waitForTaskToken"
	StartExecution        Integration = "arn:aws:states:::states:startExecution"
)

var integrationParams = map[Integration][]string{
	LambdaInvoke:          {"FunctionName", "Payload", "Qualifier", "ClientContext", "InvocationType"},
	LambdaInvokeWithToken: {"FunctionName", "Payload", "Qualifier", "ClientContext", "InvocationType"},
	ECSRunTask:            {"Cluster", "TaskDefinition", "LaunchType", "NetworkConfiguration", "Overrides", "PlatformVersion", "PropagateTags", "Group", "EnableExecuteCommand", "Tags", "StartedBy"},
	ECSRunTaskWithToken:   {"Cluster", "TaskDefinition", "LaunchType", "NetworkConfiguration", "Overrides", "PlatformVersion", "PropagateTags", "Group", "EnableExecuteCommand", "Tags", "StartedBy"},
	StartExecution:        {"StateMachineArn", "Name", "Input"},
}

func (i Integration) waitsForToken() bool { return strings.HasSuffix(string(i), ".waitForTaskToken") }

// resourceNames splits the integration into Step Functions' history
// resourceType and resource ("lambda", "invoke.waitForTaskToken").
func (i Integration) resourceNames() (string, string) {
	s := strings.TrimPrefix(string(i), "arn:aws:states:::")
	typ, res, _ := strings.Cut(s, ":")
	return typ, res
}

// State is one state of a Machine.
type State struct {
	Name string
	Type string

	Next string
	End  bool

	InputPath, OutputPath, ResultPath optPath
	Parameters, ResultSelector        *template
	Result                            any
	HasResult                         bool

	Resource             Integration
	TimeoutSeconds       int
	TimeoutSecondsPath   *Path
	HeartbeatSeconds     int
	HeartbeatSecondsPath *Path
	Retry                []Retrier
	Catch                []Catcher

	Choices []*choiceRule
	Default string

	Seconds       int
	HasSeconds    bool
	SecondsPath   *Path
	Timestamp     time.Time
	HasTimestamp  bool
	TimestampPath *Path

	Error, Cause         string
	ErrorPath, CausePath *Path
}

var allowedFields = map[string][]string{
	"Pass":    {"InputPath", "OutputPath", "Parameters", "ResultPath", "Result", "Next", "End"},
	"Task":    {"InputPath", "OutputPath", "Parameters", "ResultSelector", "ResultPath", "Resource", "TimeoutSeconds", "TimeoutSecondsPath", "HeartbeatSeconds", "HeartbeatSecondsPath", "Retry", "Catch", "Next", "End"},
	"Choice":  {"InputPath", "OutputPath", "Choices", "Default"},
	"Wait":    {"InputPath", "OutputPath", "Seconds", "SecondsPath", "Timestamp", "TimestampPath", "Next", "End"},
	"Succeed": {"InputPath", "OutputPath"},
	"Fail":    {"Error", "Cause", "ErrorPath", "CausePath"},
}

var placeholderRE = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)\}`)

// maxTimeoutSeconds is the largest TimeoutSeconds/HeartbeatSeconds Step
// Functions accepts.
const maxTimeoutSeconds = 99999999

// Load parses and validates a definition, replacing each ${Name} inside
// string values with subs[Name] the way CDK's DefinitionSubstitutions do.
// A placeholder without a substitution, a field or state type outside the
// supported subset, or an invalid value is a *LoadError naming the state
// and field. Nothing unsupported is silently ignored.
func Load(def []byte, subs map[string]string) (*Machine, error) {
	doc, err := decodeJSON(def)
	if err != nil {
		return nil, &LoadError{Field: "(document)", Msg: err.Error()}
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return nil, &LoadError{Field: "(document)", Msg: "a definition must be a JSON object"}
	}
	if subs != nil {
		if err := substitute(top, subs); err != nil {
			return nil, err
		}
	}
	resolved, err := json.Marshal(top)
	if err != nil {
		return nil, fmt.Errorf("states: re-encode definition: %w", err)
	}
	m := &Machine{States: map[string]*State{}, Definition: resolved}
	for k, v := range top {
		switch k {
		case "Comment", "Version":
		case "QueryLanguage":
			if v != "JSONPath" {
				return nil, &LoadError{Field: k, Msg: "only JSONPath is supported"}
			}
		case "StartAt":
			s, ok := v.(string)
			if !ok {
				return nil, &LoadError{Field: k, Msg: "must be a state name"}
			}
			m.StartAt = s
		case "States":
		default:
			return nil, &LoadError{Field: k, Msg: "not supported by the local executor"}
		}
	}
	states, ok := top["States"].(map[string]any)
	if !ok || len(states) == 0 {
		return nil, &LoadError{Field: "States", Msg: "must be a non-empty object"}
	}
	for _, name := range sortedKeys(states) {
		raw, ok := states[name].(map[string]any)
		if !ok {
			return nil, &LoadError{State: name, Field: "(state)", Msg: "a state must be an object"}
		}
		st, err := loadState(name, raw)
		if err != nil {
			return nil, err
		}
		m.States[name] = st
	}
	if _, ok := m.States[m.StartAt]; !ok {
		return nil, &LoadError{Field: "StartAt", Msg: fmt.Sprintf("names no state (%q)", m.StartAt)}
	}
	for _, name := range sortedStateNames(m.States) {
		if err := m.checkTargets(m.States[name]); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func sortedStateNames(m map[string]*State) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func (m *Machine) checkTargets(st *State) error {
	check := func(field, target string) error {
		if _, ok := m.States[target]; !ok {
			return &LoadError{State: st.Name, Field: field, Msg: fmt.Sprintf("names no state (%q)", target)}
		}
		return nil
	}
	if st.Next != "" {
		if err := check("Next", st.Next); err != nil {
			return err
		}
	}
	if st.Default != "" {
		if err := check("Default", st.Default); err != nil {
			return err
		}
	}
	for i, c := range st.Choices {
		if err := check(fmt.Sprintf("Choices[%d].Next", i), c.next); err != nil {
			return err
		}
	}
	for i, c := range st.Catch {
		if err := check(fmt.Sprintf("Catch[%d].Next", i), c.Next); err != nil {
			return err
		}
	}
	return nil
}

// substitute replaces ${Name} placeholders in every string value.
func substitute(top map[string]any, subs map[string]string) error {
	var walk func(v any, state, field string) (any, error)
	walk = func(v any, state, field string) (any, error) {
		switch x := v.(type) {
		case string:
			var missing string
			out := placeholderRE.ReplaceAllStringFunc(x, func(ph string) string {
				name := ph[2 : len(ph)-1]
				val, ok := subs[name]
				if !ok {
					missing = name
					return ph
				}
				return val
			})
			if missing != "" {
				return nil, &LoadError{State: state, Field: field, Msg: fmt.Sprintf("no substitution for ${%s}", missing)}
			}
			return out, nil
		case map[string]any:
			for k, e := range x {
				nv, err := walk(e, state, fieldOr(field, k))
				if err != nil {
					return nil, err
				}
				x[k] = nv
			}
		case []any:
			for i, e := range x {
				nv, err := walk(e, state, field)
				if err != nil {
					return nil, err
				}
				x[i] = nv
			}
		}
		return v, nil
	}
	states, _ := top["States"].(map[string]any)
	for name, st := range states {
		if _, err := walk(st, name, ""); err != nil {
			return err
		}
	}
	return nil
}
