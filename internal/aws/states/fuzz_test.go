package states

import (
	"reflect"
	"testing"
)

// FuzzLoad loads arbitrary definitions (seeded with run.asl.json). Load
// must not panic: it returns a machine or a *LoadError.
//
//	go test ./internal/aws/states -run '^$' -fuzz FuzzLoad -fuzztime 30s
func FuzzLoad(f *testing.F) {
	f.Add(runASL(f))
	f.Add([]byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","Result":{"x":1},"ResultPath":"$.r","End":true}}}`))
	f.Add([]byte(`{"StartAt":"A","States":{"A":{"Type":"Choice","Choices":[{"Variable":"$.n","NumericGreaterThan":1,"Next":"A"}],"Default":"B"},"B":{"Type":"Succeed"}}}`))
	f.Add([]byte(`{"StartAt":"W","States":{"W":{"Type":"Wait","SecondsPath":"$.s","Next":"F"},"F":{"Type":"Fail","Error":"E","Cause":"${Missing}"}}}`))
	f.Add([]byte(`{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"${StepFunctionArn}","Payload.$":"States.Format('{}', $.a)"},"Retry":[{"ErrorEquals":["States.ALL"],"MaxAttempts":2}],"End":true}}}`))
	f.Fuzz(func(t *testing.T, def []byte) {
		m, err := Load(def, runSubs)
		if err == nil && m == nil {
			t.Fatal("Load returned neither a machine nor an error")
		}
		if err != nil {
			if _, ok := err.(*LoadError); !ok {
				t.Fatalf("Load error %T, want *LoadError: %v", err, err)
			}
		}
	})
}

// FuzzPath parses arbitrary JSONPaths and applies them to arbitrary
// execution input. Nothing may panic; a reference path that Set accepts
// must Get back the value it set; Set never changes its input.
//
//	go test ./internal/aws/states -run '^$' -fuzz FuzzPath -fuzztime 30s
func FuzzPath(f *testing.F) {
	f.Add("$.run_id", `{"run_id":"run_1","next":"continue"}`)
	f.Add("$.a.b[0]", `{"a":{"b":[1,2,3]}}`)
	f.Add("$.a[*].c", `{"a":[{"c":1},{"c":2}]}`)
	f.Add("$['x y'][-1:]", `{"x y":[1,2]}`)
	f.Add("$..a", `[]`)
	f.Add("$.a[99999999999999999999]", `{"a":[]}`)
	f.Add("$", `null`)
	f.Fuzz(func(t *testing.T, path, input string) {
		p, err := ParsePath(path)
		if err != nil {
			return
		}
		doc, err := decodeJSON([]byte(input))
		if err != nil {
			return
		}
		_, _ = p.Get(doc)
		if !p.IsReference() {
			return
		}
		before, _ := decodeJSON([]byte(input))
		val := map[string]any{"set": "by fuzz"}
		out, err := p.Set(doc, val)
		if err != nil {
			return
		}
		if !reflect.DeepEqual(doc, before) {
			t.Fatalf("Set changed its input: %v, was %v", doc, before)
		}
		got, err := p.Get(out)
		if err != nil || !reflect.DeepEqual(got, val) {
			t.Fatalf("Get after Set(%q) = %v, %v; want %v (doc %v)", path, got, err, val, out)
		}
	})
}
