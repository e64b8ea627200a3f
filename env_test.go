package keel_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/keelrun/keel"
)

// ExampleEnvVars: a program's own variables, checked like Keel's.
func ExampleEnvVars() {
	env := keel.EnvVars{Prefix: "SHOP_", Names: []string{"SHOP_DB_URL"}, Moved: map[string]string{"SHOP_DATABASE": "SHOP_DB_URL"}}
	fmt.Println(env.Check([]string{"SHOP_DB_URL=postgres://db", "PATH=/bin"}))
	fmt.Println(env.Check([]string{"SHOP_DATABASE=postgres://db", "SHOP_DB_ULR=postgres://db"}))
	// Output:
	// <nil>
	// unknown configuration: SHOP_DATABASE is no longer read: it moved to SHOP_DB_URL; SHOP_DB_ULR is not one of SHOP_DB_URL; unset it, or it would be ignored
}

func TestEnvVarsCheck(t *testing.T) {
	env := keel.EnvVars{Prefix: "SHOP_", Names: []string{"SHOP_DB_URL", "SHOP_TIMEOUT"}, Moved: map[string]string{"SHOP_DATABASE": "SHOP_DB_URL"}}
	cases := []struct {
		name    string
		env     keel.EnvVars
		environ []string
		want    string // "" means accepted
	}{
		{"known", env, []string{"SHOP_DB_URL=x", "SHOP_TIMEOUT=1s", "KEEL_MODEL=x", "SHOPPING=1"}, ""},
		{"misspelled", env, []string{"SHOP_TIMEOUTS=1s"}, "SHOP_TIMEOUTS is not one of SHOP_DB_URL, SHOP_TIMEOUT"},
		{"moved", env, []string{"SHOP_DATABASE=x"}, "SHOP_DATABASE is no longer read: it moved to SHOP_DB_URL"},
		{"set but empty", env, []string{"SHOP_X="}, "SHOP_X is not one of"},
		{"value never shown", env, []string{"SHOP_KEY=sk-secret-value"}, "SHOP_KEY"},
		{"Keel's prefix", keel.EnvVars{Prefix: "KEEL_"}, nil, "must not be KEEL_"},
		{"no prefix", keel.EnvVars{}, nil, "Prefix must be set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.env.Check(tc.environ)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			case err != nil && strings.Contains(err.Error(), "sk-secret-value"):
				t.Fatalf("error %q shows a value", err)
			}
		})
	}
}
