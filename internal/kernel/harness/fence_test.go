package harness_test

import (
	"os/exec"
	"strings"
	"testing"
)

// kernel is the code that decides what a run does next: the run's
// records, the store and artifact ports, the operation protocol, tools,
// the model interfaces, the span descriptors and the harness.
var kernel = []string{
	"github.com/keelrun/keel/internal/kernel/run",
	"github.com/keelrun/keel/internal/kernel/store",
	"github.com/keelrun/keel/internal/kernel/artifact",
	"github.com/keelrun/keel/internal/kernel/ops",
	"github.com/keelrun/keel/internal/kernel/tool",
	"github.com/keelrun/keel/internal/kernel/model",
	"github.com/keelrun/keel/internal/kernel/span",
	"github.com/keelrun/keel/internal/kernel/harness",
}

// outside are the import paths the kernel must not link ("x/": what
// lies under x; "x": x and its sub-packages), and why: it knows no cloud, no exporter, no provider and no configuration,
// so it can be read, tested and changed without any of them.
var outside = []struct{ prefix, why string }{
	{"github.com/aws/", "a cloud SDK (backends and adapters translate it at the seam)"},
	{"go.opentelemetry.io/", "an exporter (the harness records through harness.Telemetry)"},
	{"github.com/keelrun/keel/internal/observe/otelkeel", "the OpenTelemetry instrumentation (it implements harness.Telemetry)"},
	{"github.com/keelrun/keel/internal/config", "configuration (internal/compose reads it)"},
	{"github.com/keelrun/keel/internal/compose", "the wiring"},
	{"github.com/keelrun/keel/internal/kernel/model/anthropic", "a model provider"},
	{"github.com/keelrun/keel/internal/kernel/model/openai", "a model provider"},
	{"github.com/keelrun/keel/internal/kernel/model/bedrock", "a model provider"},
	{"github.com/keelrun/keel/internal/kernel/model/provider", "the providers' registry"},
	{"github.com/keelrun/keel/internal/kernel/store/", "a store backend (the kernel holds the port)"},
	{"github.com/keelrun/keel/internal/kernel/artifact/", "an artifact backend (the kernel holds the port)"},
}

// TestKernelFence: `go list -deps` of the kernel, in each build that
// changes its files, names none of the packages in outside. A failure
// names each edge that crosses the fence: the package inside that
// imports one outside, whatever that one drags in after it.
func TestKernelFence(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	for _, tags := range []string{"", "keel_lambda,keel_role_api,keel_env_aws,keel_no_models", "keel_skip_reconcile"} {
		t.Run("tags="+tags, func(t *testing.T) {
			args := append([]string{"list", "-deps", "-tags", tags, "-f", "{{.ImportPath}} {{join .Imports \" \"}}"}, kernel...)
			out, err := exec.Command("go", args...).CombinedOutput()
			if err != nil {
				t.Fatalf("go list -deps: %v\n%s", err, out)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				pkg, imports, _ := strings.Cut(line, " ")
				if _, out := crossing(pkg); out {
					continue // reached through an edge reported below
				}
				for _, imp := range strings.Fields(imports) {
					if why, out := crossing(imp); out {
						t.Errorf("%s imports %s: %s", pkg, imp, why)
					}
				}
			}
		})
	}
}

// crossing reports whether the package at path lies outside the fence,
// and why.
func crossing(path string) (why string, out bool) {
	for _, o := range outside {
		// "x/" is anything under x; "x" is x and its sub-packages.
		rest, ok := strings.CutPrefix(path, o.prefix)
		if ok && (strings.HasSuffix(o.prefix, "/") || rest == "" || rest[0] == '/') {
			return o.why, true
		}
	}
	return "", false
}

// TestKernelFenceCatches: the fence's matcher flags what it should and
// only that (the listing itself is go list's).
func TestKernelFenceCatches(t *testing.T) {
	for _, tc := range []struct {
		dep  string
		want bool
	}{
		{"github.com/aws/aws-sdk-go-v2/aws", true},
		{"go.opentelemetry.io/otel/trace", true},
		{"github.com/keelrun/keel/internal/config", true},
		{"github.com/keelrun/keel/internal/observe/otelkeel", true},
		{"github.com/keelrun/keel/internal/kernel/model/provider", true},
		{"github.com/keelrun/keel/internal/kernel/store/dynamo", true},
		{"github.com/keelrun/keel/internal/kernel/store", false},
		{"github.com/keelrun/keel/internal/kernel/model", false},
		{"github.com/keelrun/keel/internal/kernel/model/sse", false},
		{"github.com/keelrun/keel/internal/configx", false},
		{"github.com/aws", false},
	} {
		if _, got := crossing(tc.dep); got != tc.want {
			t.Errorf("crossing(%s) = %v, want %v", tc.dep, got, tc.want)
		}
	}
}
