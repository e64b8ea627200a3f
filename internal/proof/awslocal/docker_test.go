package awslocal

import (
	"reflect"
	"testing"
)

func TestLambdaContainers(t *testing.T) {
	ps := "0a1\tlocalstack-main-lambda-keel-kill-step-keel-functionsstepe9f5eedf-ab12-3f6c2a\trunning\n" +
		"0a2\tlocalstack-main-lambda-keel-kill-step-keel-functionsapi45de0ce2-ab12-77d1e0\trunning\n" +
		"0a3\tlocalstack-main-lambda-keel-kill-step-keel-functionsstepe9f5eedf-ab12-9e8d7c\texited\n" +
		"0a4\tother-lambda-keel-kill-step-keel-functionsstepe9f5eedf-ab12-1a2b3c\trunning\n" +
		"0a5\tlocalstack-main\trunning\n"
	cs, err := parsePS([]byte(ps))
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 5 {
		t.Fatalf("parsed %d containers, want 5", len(cs))
	}
	fn := "Keel-kill-step-keel-FunctionsStepE9F5EEDF-AB12"
	if p := lambdaContainerPrefix("localstack-main", fn); p != "localstack-main-lambda-keel-kill-step-keel-functionsstepe9f5eedf-ab12-" {
		t.Errorf("prefix %q", p)
	}
	for _, tc := range []struct {
		name, main, function string
		want                 []string
	}{
		{"the running step environment", "localstack-main", fn, []string{"0a1"}},
		{"another main container", "other", fn, []string{"0a4"}},
		{"underscores become dashes", "localstack_main", fn, []string{"0a1"}},
		{"no such function", "localstack-main", "Keel-x-Sweep", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ids []string
			for _, c := range lambdaContainers(cs, tc.main, tc.function) {
				ids = append(ids, c.ID)
			}
			if !reflect.DeepEqual(ids, tc.want) {
				t.Fatalf("got %v, want %v", ids, tc.want)
			}
		})
	}
	if _, err := parsePS([]byte("just one field\n")); err == nil {
		t.Error("a line without three fields parsed")
	}
}
