package states

import (
	"errors"
	"testing"
)

func TestChoiceRules(t *testing.T) {
	input := `{"s": "keel", "n": 12, "f": 1.5, "b": true, "ts": "2030-01-02T03:04:05Z", "ts2": "2030-01-02T03:04:06Z",
		"nul": null, "other": "keel", "lim": 12, "obj": {"next": "approval"}}`
	tests := []struct {
		name    string
		rule    string
		want    bool
		wantErr bool
	}{
		{name: "StringEquals", rule: `{"Variable": "$.s", "StringEquals": "keel"}`, want: true},
		{name: "StringEquals on a number is false", rule: `{"Variable": "$.n", "StringEquals": "12"}`, want: false},
		{name: "StringLessThan", rule: `{"Variable": "$.s", "StringLessThan": "zeta"}`, want: true},
		{name: "StringGreaterThanEquals", rule: `{"Variable": "$.s", "StringGreaterThanEquals": "keel"}`, want: true},
		{name: "StringMatches", rule: `{"Variable": "$.s", "StringMatches": "k*l"}`, want: true},
		{name: "StringMatches escaped star", rule: `{"Variable": "$.s", "StringMatches": "k\\*l"}`, want: false},
		{name: "StringEqualsPath", rule: `{"Variable": "$.s", "StringEqualsPath": "$.other"}`, want: true},
		{name: "NumericEquals", rule: `{"Variable": "$.n", "NumericEquals": 12}`, want: true},
		{name: "NumericLessThan float", rule: `{"Variable": "$.f", "NumericLessThan": 2}`, want: true},
		{name: "NumericGreaterThan", rule: `{"Variable": "$.n", "NumericGreaterThan": 12}`, want: false},
		{name: "NumericGreaterThanEquals", rule: `{"Variable": "$.n", "NumericGreaterThanEquals": 12}`, want: true},
		{name: "NumericLessThanEqualsPath", rule: `{"Variable": "$.n", "NumericLessThanEqualsPath": "$.lim"}`, want: true},
		{name: "NumericEquals on a string is false", rule: `{"Variable": "$.s", "NumericEquals": 1}`, want: false},
		{name: "BooleanEquals", rule: `{"Variable": "$.b", "BooleanEquals": true}`, want: true},
		{name: "TimestampLessThan", rule: `{"Variable": "$.ts", "TimestampLessThan": "2030-01-02T03:04:06Z"}`, want: true},
		{name: "TimestampGreaterThanPath", rule: `{"Variable": "$.ts2", "TimestampGreaterThanPath": "$.ts"}`, want: true},
		{name: "TimestampEquals across zones", rule: `{"Variable": "$.ts", "TimestampEquals": "2030-01-02T04:04:05+01:00"}`, want: true},
		{name: "IsPresent true", rule: `{"Variable": "$.obj.next", "IsPresent": true}`, want: true},
		{name: "IsPresent false on a missing field", rule: `{"Variable": "$.nope", "IsPresent": false}`, want: true},
		{name: "IsNull", rule: `{"Variable": "$.nul", "IsNull": true}`, want: true},
		{name: "IsNull false on a value", rule: `{"Variable": "$.s", "IsNull": false}`, want: true},
		{name: "IsNumeric", rule: `{"Variable": "$.n", "IsNumeric": true}`, want: true},
		{name: "IsString", rule: `{"Variable": "$.n", "IsString": true}`, want: false},
		{name: "IsBoolean", rule: `{"Variable": "$.b", "IsBoolean": true}`, want: true},
		{name: "IsTimestamp", rule: `{"Variable": "$.ts", "IsTimestamp": true}`, want: true},
		{name: "And", rule: `{"And": [{"Variable": "$.s", "StringEquals": "keel"}, {"Variable": "$.n", "NumericGreaterThan": 10}]}`, want: true},
		{name: "And short-circuits false", rule: `{"And": [{"Variable": "$.s", "StringEquals": "x"}, {"Variable": "$.nope", "NumericGreaterThan": 10}]}`, want: false},
		{name: "Or", rule: `{"Or": [{"Variable": "$.s", "StringEquals": "x"}, {"Variable": "$.b", "BooleanEquals": true}]}`, want: true},
		{name: "Not", rule: `{"Not": {"Variable": "$.s", "StringEquals": "x"}}`, want: true},
		{name: "a missing Variable is a runtime error", rule: `{"Variable": "$.nope", "StringEquals": "x"}`, wantErr: true},
		{name: "a missing ...Path operand is a runtime error", rule: `{"Variable": "$.s", "StringEqualsPath": "$.nope"}`, wantErr: true},
	}
	in := mustJSON(t, input)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := compileChoiceRule(mustJSON(t, tc.rule).(map[string]any), false)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.eval(in)
			if tc.wantErr {
				if !errors.Is(err, errChoiceRuntime) {
					t.Fatalf("err = %v, want a choice runtime error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
