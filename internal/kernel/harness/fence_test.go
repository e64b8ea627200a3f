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
	{"github.com/keelrun/keel/internal/backend/", "a backend: a store, an artifact store or a model provider (the kernel holds the ports)"},
}

// testBackends are the backends the kernel's own tests may link, those of
// harnesstest: real ones with no cloud, exporter or configuration behind
// them.
var testBackends = []string{
	"github.com/keelrun/keel/internal/backend/store/sqlite",
	"github.com/keelrun/keel/internal/backend/artifact/fs",
	"github.com/keelrun/keel/internal/kernel/model/scripted",
}

// module is Keel's module path: of its packages, a kernel test binary
// may link only those under internal/kernel.
const module = "github.com/keelrun/keel"

// fenceTags are the builds that change the kernel's files.
var fenceTags = []string{"", "keel_lambda,keel_role_api,keel_env_aws,keel_no_models", "keel_skip_reconcile"}

// TestKernelFence: `go list -deps` of the kernel, in each build that
// changes its files, names none of the packages in outside. A failure
// names each edge that crosses the fence: the package inside that
// imports one outside, whatever that one drags in after it.
func TestKernelFence(t *testing.T) {
	for _, tags := range fenceTags {
		t.Run("tags="+tags, func(t *testing.T) { checkFence(t, "-deps", tags, kernel, crossing) })
	}
}

// TestKernelTestFence: the kernel's test binaries — `go list -test -deps`
// of the kernel and of harnesstest, the agent its tests run — link no
// package in outside either, but testBackends, and no package of Keel
// outside internal/kernel (the research fixture, package keel, compose,
// the observers): the kernel tests itself on kernel types, so that no
// AWS SDK or smithy package, no OpenTelemetry exporter and no
// internal/config is built to test it.
func TestKernelTestFence(t *testing.T) {
	pkgs := append([]string{module + "/internal/kernel/harness/harnesstest"}, kernel...)
	for _, tags := range fenceTags {
		t.Run("tags="+tags, func(t *testing.T) { checkFence(t, "-test", tags, pkgs, crossingInTests) })
	}
}

// checkFence lists pkgs' dependencies ("-deps", or with their test
// binaries, "-test") under tags and fails on each edge from a package
// inside to one that out says is outside.
func checkFence(t *testing.T, mode, tags string, pkgs []string, out func(string) (string, bool)) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	args := []string{"list", "-deps", "-tags", tags, "-f", "{{.ImportPath}}\t{{join .Imports \",\"}}"}
	if mode == "-test" {
		args = append(args, "-test")
	}
	list, err := exec.Command("go", append(args, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", mode, err, list)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(list)), "\n") {
		pkg, imports, _ := strings.Cut(line, "\t")
		if _, ok := out(variantOf(pkg)); ok {
			continue // reached through an edge reported below
		}
		for _, imp := range strings.Split(imports, ",") {
			if why, ok := out(variantOf(imp)); ok && imp != "" {
				t.Errorf("%s imports %s: %s", pkg, imp, why)
			}
		}
	}
}

// variantOf is the import path of a package as go list -test names its
// variants: "p [q.test]" is p, built for q's test.
func variantOf(path string) string {
	p, _, _ := strings.Cut(path, " ")
	return p
}

// crossingInTests reports whether a kernel test binary may not link the
// package at path, and why: outside the fence, unless a test backend;
// or a package of Keel outside internal/kernel.
func crossingInTests(path string) (why string, out bool) {
	for _, b := range testBackends {
		if path == b {
			return "", false
		}
	}
	if why, out := crossing(path); out {
		return why, true
	}
	rest, ok := strings.CutPrefix(path, module)
	if ok && (rest == "" || rest[0] == '/') && !strings.HasPrefix(rest, "/internal/kernel/") {
		return "Keel outside the kernel (kernel tests run harnesstest's agent, not the product's)", true
	}
	return "", false
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

// TestKernelFenceCatches: the fence's matchers flag what they should and
// only that (the listing itself is go list's).
func TestKernelFenceCatches(t *testing.T) {
	for _, tc := range []struct {
		dep           string
		want, inTests bool
	}{
		{"github.com/aws/aws-sdk-go-v2/aws", true, true},
		{"github.com/aws/smithy-go", true, true},
		{"go.opentelemetry.io/otel/trace", true, true},
		{"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp", true, true},
		{"github.com/keelrun/keel/internal/config", true, true},
		{"github.com/keelrun/keel/internal/observe/otelkeel", true, true},
		{"github.com/keelrun/keel/internal/backend/model/provider", true, true},
		{"github.com/keelrun/keel/internal/backend/model/anthropic", true, true},
		{"github.com/keelrun/keel/internal/backend/store/dynamo", true, true},
		{"github.com/keelrun/keel/internal/backend/store/sqlite", true, false},
		{"github.com/keelrun/keel/internal/backend/artifact/fs", true, false},
		{"github.com/keelrun/keel/internal/kernel/model/scripted", false, false},
		{"github.com/keelrun/keel/internal/kernel/harness/harnesstest", false, false},
		{"github.com/keelrun/keel/internal/kernel/store", false, false},
		{"github.com/keelrun/keel/internal/kernel/model", false, false},
		{"github.com/keelrun/keel/internal/backend/model/sse", true, true},
		{"github.com/keelrun/keel/internal/backend/artifact/s3", true, true},
		{"github.com/keelrun/keel/internal/kernel/store/storetest", false, false},
		{"github.com/keelrun/keel/internal/backends", false, true},
		{"github.com/keelrun/keel", false, true},
		{"github.com/keelrun/keel/internal/fixture", false, true},
		{"github.com/keelrun/keel/internal/observe/explain", false, true},
		{"github.com/keelrun/keel/internal/configx", false, true},
		{"github.com/keelrun/keelx", false, false},
		{"github.com/aws", false, false},
		{"modernc.org/sqlite", false, false},
	} {
		if _, got := crossing(tc.dep); got != tc.want {
			t.Errorf("crossing(%s) = %v, want %v", tc.dep, got, tc.want)
		}
		if _, got := crossingInTests(tc.dep); got != tc.inTests {
			t.Errorf("crossingInTests(%s) = %v, want %v", tc.dep, got, tc.inTests)
		}
	}
	if got := variantOf("github.com/keelrun/keel/internal/kernel/run [github.com/keelrun/keel/internal/kernel/run.test]"); got != "github.com/keelrun/keel/internal/kernel/run" {
		t.Errorf("variantOf a test variant = %s", got)
	}
}
