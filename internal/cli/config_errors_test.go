package cli

import (
	"bufio"
	"context"
	"strings"
	"testing"
)

// TestConfigurationRefusals: a bad or misspelt KEEL_* variable is named
// as the variable (exit 2, no usage block: the command line was right),
// with the likely fix; a run of an unknown agent is answered with the
// agents there are.
func TestConfigurationRefusals(t *testing.T) {
	e := newTestEnv(t, false)
	cases := []struct {
		name    string
		env     map[string]string
		args    []string
		code    int
		want    []string
		notWant []string
	}{
		{name: "KEEL_ADDR", env: map[string]string{"KEEL_ADDR": "8080"}, args: []string{"dev", "--data-dir", t.TempDir()},
			code: exitUsage, want: []string{`KEEL_ADDR "8080": want HOST:PORT`}, notWant: []string{"--addr", "usage:"}},
		{name: "--addr is still the flag's", env: map[string]string{"KEEL_ADDR": "127.0.0.1:0"}, args: []string{"dev", "--data-dir", t.TempDir(), "--addr", "8080"},
			code: exitUsage, want: []string{`--addr "8080": want HOST:PORT`, "usage:"}},
		{name: "KEEL_URL without a scheme", env: map[string]string{"KEEL_URL": "127.0.0.1:8080", "KEEL_TOKEN": token}, args: []string{"runs"},
			code: exitUsage, want: []string{"KEEL_URL: ", "(add http://: http://127.0.0.1:8080)"}, notWant: []string{"--url", "usage:"}},
		{name: "--url without a scheme", args: []string{"--url", "localhost:8080", "runs"},
			code: exitUsage, want: []string{"--url: ", "(add http://: http://localhost:8080)"}},
		{name: "a misspelt KEEL_TOKEN", env: map[string]string{"KEEL_URL": e.srv.URL, "KEEL_TOKN": "x"}, args: []string{"runs"},
			code: exitUsage, want: []string{"KEEL_TOKN is not a Keel variable (did you mean KEEL_TOKEN?"}, notWant: []string{"usage:"}},
		{name: "a misspelt variable refused by dev too", env: map[string]string{"KEEL_STEP_BUDGT": "1m"}, args: []string{"dev", "--data-dir", t.TempDir()},
			code: exitUsage, want: []string{"did you mean KEEL_STEP_BUDGET?"}},
		{name: "an unknown agent", env: map[string]string{"KEEL_URL": e.srv.URL, "KEEL_TOKEN": token}, args: []string{"run", "reserch", "go"},
			code: exitUsage, want: []string{`unknown agent "reserch" (this API runs: research)`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb strings.Builder
			c := &cli{prog: "shop", dir: t.TempDir(), stdin: bufio.NewReader(strings.NewReader("")), stdout: &out, stderr: &errb,
				getenv: func(k string) string { return tc.env[k] },
				environ: func() []string {
					var kv []string
					for k, v := range tc.env {
						kv = append(kv, k+"="+v)
					}
					return kv
				}}
			code := execute(context.Background(), tc.args, c)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr %q", code, tc.code, errb.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr %q lacks %q", errb.String(), w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(errb.String(), w) {
					t.Errorf("stderr %q has %q", errb.String(), w)
				}
			}
		})
	}
}
