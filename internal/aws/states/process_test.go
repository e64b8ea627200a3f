package states

import (
	"strings"
	"testing"
)

// procState compiles the input/output processing fields of a state.
func procState(t *testing.T, fields string) *State {
	t.Helper()
	raw := mustJSON(t, fields).(map[string]any)
	st := &State{Name: "X", Type: "Task"}
	var err error
	path := func(k string) optPath {
		v, ok := raw[k]
		if !ok {
			return optPath{}
		}
		if v == nil {
			return optPath{set: true, null: true}
		}
		p, perr := ParsePath(v.(string))
		if perr != nil {
			t.Fatal(perr)
		}
		return optPath{set: true, path: p}
	}
	st.InputPath, st.ResultPath, st.OutputPath = path("InputPath"), path("ResultPath"), path("OutputPath")
	if v, ok := raw["Parameters"]; ok {
		if st.Parameters, err = compileTemplate(v); err != nil {
			t.Fatal(err)
		}
	}
	if v, ok := raw["ResultSelector"]; ok {
		if st.ResultSelector, err = compileTemplate(v); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// TestSpecInputOutputExamples runs the worked examples of input and output
// processing from the Amazon States Language specification (Payload
// Template, Intrinsic Functions, Input and Output Processing, Pass State,
// JSONPath Runtime Errors) and the Step Functions developer guide's
// ResultSelector example.
func TestSpecInputOutputExamples(t *testing.T) {
	tests := []struct {
		name          string
		fields        string
		input         string
		ctx           string
		result        string // the task's raw result; "" means the effective input
		wantEffective string
		wantOutput    string
		wantErr       string
	}{
		{
			name: "payload template with paths, a slice, the context object and States.Format",
			fields: `{"Parameters": {"flagged": true, "parts": {"first.$": "$.vals[0]", "last3.$": "$.vals[-3:]"},
				"weekday.$": "$$.DayOfWeek", "formattedOutput.$": "States.Format('Today is {}', $$.DayOfWeek)"}}`,
			input:         `{"flagged": 7, "vals": [0, 10, 20, 30, 40, 50]}`,
			ctx:           `{"DayOfWeek": "TUESDAY"}`,
			wantEffective: `{"flagged": true, "parts": {"first": 0, "last3": [30, 40, 50]}, "weekday": "TUESDAY", "formattedOutput": "Today is TUESDAY"}`,
		},
		{
			name:          "States.Format with an escaped apostrophe",
			fields:        `{"Parameters": {"greeting.$": "States.Format('Welcome to {} {}\\'s playlist.', $.firstName, $.lastName)"}}`,
			input:         `{"firstName": "John", "lastName": "Doe"}`,
			wantEffective: `{"greeting": "Welcome to John Doe's playlist."}`,
		},
		{
			name:          "InputPath selects the numbers, ResultPath adds the sum to the raw input",
			fields:        `{"InputPath": "$.numbers", "ResultPath": "$.sum"}`,
			input:         `{"title": "Numbers to add", "numbers": {"val1": 3, "val2": 4}}`,
			result:        `7`,
			wantEffective: `{"val1": 3, "val2": 4}`,
			wantOutput:    `{"title": "Numbers to add", "numbers": {"val1": 3, "val2": 4}, "sum": 7}`,
		},
		{
			name:       "ResultPath overwrites an existing field",
			fields:     `{"ResultPath": "$.master.detail"}`,
			input:      `{"master": {"detail": [1, 2, 3]}}`,
			result:     `6`,
			wantOutput: `{"master": {"detail": 6}}`,
		},
		{
			name:       "ResultPath builds a chain of new fields",
			fields:     `{"ResultPath": "$.master.result.sum"}`,
			input:      `{"master": {"detail": [1, 2, 3]}}`,
			result:     `6`,
			wantOutput: `{"master": {"detail": [1, 2, 3], "result": {"sum": 6}}}`,
		},
		{
			name:       "ResultPath constructs intervening objects",
			fields:     `{"ResultPath": "$.b.greeting"}`,
			input:      `{"a": 1}`,
			result:     `"Hi!"`,
			wantOutput: `{"a": 1, "b": {"greeting": "Hi!"}}`,
		},
		{
			name:       "Pass state Result placed at ResultPath",
			fields:     `{"ResultPath": "$.coords"}`,
			input:      `{"georefOf": "Home"}`,
			result:     `{"x-datum": 0.381018, "y-datum": 622.2269926397355}`,
			wantOutput: `{"georefOf": "Home", "coords": {"x-datum": 0.381018, "y-datum": 622.2269926397355}}`,
		},
		{
			name:       "default ResultPath replaces the input with the result",
			fields:     `{}`,
			input:      `{"comment": "This is a test", "details": "Default example", "who": "Step Functions"}`,
			result:     `"Hello, Step Functions!"`,
			wantOutput: `"Hello, Step Functions!"`,
		},
		{
			name:       "ResultPath null discards the result",
			fields:     `{"ResultPath": null}`,
			input:      `{"comment": "This is a test"}`,
			result:     `"Hello, Step Functions!"`,
			wantOutput: `{"comment": "This is a test"}`,
		},
		{
			name:          "InputPath null gives an empty effective input",
			fields:        `{"InputPath": null}`,
			input:         `{"a": 1}`,
			wantEffective: `{}`,
		},
		{
			name:       "OutputPath null gives an empty output",
			fields:     `{"OutputPath": null}`,
			input:      `{"a": 1}`,
			result:     `2`,
			wantOutput: `{}`,
		},
		{
			name:       "OutputPath selects part of the combined output",
			fields:     `{"ResultPath": "$.taskresult", "OutputPath": "$.taskresult"}`,
			input:      `{"comment": "An input comment."}`,
			result:     `"Hello, Step Functions!"`,
			wantOutput: `"Hello, Step Functions!"`,
		},
		{
			name:   "ResultSelector reshapes the result before ResultPath",
			fields: `{"ResultSelector": {"ClusterId.$": "$.output.ClusterId", "ResourceType.$": "$.resourceType"}, "ResultPath": "$.EMROutput"}`,
			input:  `{"OtherDataFromInput": {}}`,
			result: `{"resourceType": "elasticmapreduce", "resource": "createCluster.sync", "output": {"SdkHttpMetadata": {"HttpStatusCode": 200},
				"SdkResponseMetadata": {"RequestId": "1234-5678-9012"}, "ClusterId": "AKIAIOSFODNN7EXAMPLE"}}`,
			wantOutput: `{"OtherDataFromInput": {}, "EMROutput": {"ClusterId": "AKIAIOSFODNN7EXAMPLE", "ResourceType": "elasticmapreduce"}}`,
		},
		{
			name:    "ResultPath into a string input is States.ResultPathMatchFailure",
			fields:  `{"ResultPath": "$.x"}`,
			input:   `"foo"`,
			result:  `1`,
			wantErr: ErrResultPathMatchFail,
		},
		{
			name:    "a Parameters path that does not match is States.ParameterPathFailure",
			fields:  `{"Parameters": {"x.$": "$.missing"}}`,
			input:   `{}`,
			wantErr: ErrParameterPathFailure,
		},
		{
			name:    "an InputPath that does not match is States.Runtime",
			fields:  `{"InputPath": "$.missing"}`,
			input:   `{}`,
			wantErr: ErrRuntime,
		},
		{
			name:    "a failing intrinsic is States.IntrinsicFailure",
			fields:  `{"Parameters": {"x.$": "States.MathAdd($.a, 1)"}}`,
			input:   `{"a": "not a number"}`,
			wantErr: ErrIntrinsicFailure,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := procState(t, tc.fields)
			raw := mustJSON(t, tc.input)
			var ctxObj any
			if tc.ctx != "" {
				ctxObj = mustJSON(t, tc.ctx)
			}
			eff, _, serr := effectiveInput(st, raw, ctxObj)
			if serr == nil && tc.wantEffective != "" {
				if got, want := canon(t, eff), canon(t, mustJSON(t, tc.wantEffective)); got != want {
					t.Errorf("effective input = %s, want %s", got, want)
				}
			}
			if serr == nil && (tc.wantOutput != "" || tc.result != "") {
				result := eff
				if tc.result != "" {
					result = mustJSON(t, tc.result)
				}
				var out any
				out, serr = stateOutput(st, raw, result, ctxObj)
				if serr == nil {
					if got, want := canon(t, out), canon(t, mustJSON(t, tc.wantOutput)); got != want {
						t.Errorf("output = %s, want %s", got, want)
					}
				}
			}
			switch {
			case tc.wantErr == "" && serr != nil:
				t.Fatalf("unexpected error %v", serr)
			case tc.wantErr != "" && serr == nil:
				t.Fatalf("want error %s, got none", tc.wantErr)
			case tc.wantErr != "" && serr.Name != tc.wantErr:
				t.Fatalf("error = %s, want %s", serr.Name, tc.wantErr)
			}
			// The raw input must not be modified by ResultPath.
			if got, want := canon(t, raw), canon(t, mustJSON(t, tc.input)); got != want {
				t.Errorf("raw input modified: %s, want %s", got, want)
			}
		})
	}
}

func TestIntrinsics(t *testing.T) {
	tests := []struct {
		name, expr, input, want, wantErr string
	}{
		{name: "nested MathAdd inside Format", expr: "States.Format('{}-g{}', $.run_id, States.MathAdd($.generation, 1))", input: `{"run_id": "r1", "generation": 4}`, want: `"r1-g5"`},
		{name: "StringSplit drops empty parts", expr: "States.StringSplit('subnet-1,subnet-2', ',')", input: `{}`, want: `["subnet-1","subnet-2"]`},
		{name: "StringSplit of empty string", expr: "States.StringSplit('', ',')", input: `{}`, want: `[]`},
		{name: "escaped braces are literal in Format", expr: `States.Format('\{x\} {}', $.a)`, input: `{"a": 1}`, want: `"{x} 1"`},
		{name: "JsonToString", expr: "States.JsonToString($.o)", input: `{"o": {"a": [1, 2]}}`, want: `"{\"a\":[1,2]}"`},
		{name: "StringToJson", expr: "States.StringToJson($.s)", input: `{"s": "{\"a\":1}"}`, want: `{"a":1}`},
		{name: "Array and ArrayLength", expr: "States.ArrayLength(States.Array(1, 'two', null))", input: `{}`, want: `3`},
		{name: "ArrayGetItem", expr: "States.ArrayGetItem($.a, 1)", input: `{"a": ["x", "y"]}`, want: `"y"`},
		{name: "MathAdd negative", expr: "States.MathAdd($.n, -3)", input: `{"n": 2}`, want: `-1`},
		{name: "Format arity mismatch", expr: "States.Format('{} {}', $.a)", input: `{"a": 1}`, wantErr: "more {} than arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseIntrinsic(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			v, err := c.eval(mustJSON(t, tc.input), nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := canon(t, v); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}
