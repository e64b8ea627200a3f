// Command lambda measures the deployed bootstraps: for each build (a set
// of tags, as the CDK app builds them) the size of the linux/arm64
// bootstrap (-trimpath -ldflags "-s -w") and, on this machine's
// architecture, its cold start — one answered invocation of its role,
// needing no AWS service:
//
//	go run ./bench/lambda -rie bin/aws-lambda-rie      (make bench-lambda)
//	go run ./bench/lambda -before /tmp/old -n 21       (make bench-lambda BEFORE=/tmp/old STARTS=21)
//
// With -before each variant is also built from that checkout (an older
// commit, e.g. `git archive COMMIT | tar -x -C /tmp/old`) and measured in
// the same run, its cold starts alternating with this build's, so that a
// before/after ratio is not one of two machines' loads.
//
// Start is measured two ways, each the median of -n cold starts:
//
//   - own: the bootstrap exec'd here on a Lambda Runtime API served by
//     this program (runtimeapi.go): exec → its first GET
//     /invocation/next (Go runtime and Keel's init), and exec → its
//     answer. No emulator in between.
//   - rie: a fresh AWS Lambda Runtime Interface Emulator per start;
//     first its own start (exec → listening: not the bootstrap's), then
//     the invocation sent → answered, which includes RIE starting the
//     bootstrap (RIE execs it on the first invoke) and relaying both ways.
//     "RIE overhead" is that median less own's exec → answer.
//
// The events: api answers an API Gateway (payload 2.0) GET /healthz; the
// other Lambda roles get an empty event and answer with their validation
// error (the handler ran; nothing was contacted). The task role (the
// Fargate image) is measured for size only.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/keelrun/keel/internal/proof/awslocal"
)

// variant is one build.
type variant struct {
	Name string `json:"name"`
	Tags string `json:"tags"`
	Role string `json:"role"` // the role started; "" for size only
}

var variants = []variant{
	// Before: the one binary every function ran.
	{"default (every role, no tags)", "lambda.norpc", "api"},
	{"keel_lambda (every role, the former CDK build)", "lambda.norpc,keel_lambda", "api"},
	// After: one bootstrap per role.
	{"api", awslocal.RoleBuildTags("api"), "api"},
	{"step (every provider)", awslocal.RoleBuildTags("step"), "step"},
	{"step, anthropic only", awslocal.RoleBuildTags("step") + ",keel_no_openai,keel_no_bedrock", "step"},
	{"step, bedrock only", awslocal.RoleBuildTags("step") + ",keel_no_anthropic,keel_no_openai", "step"},
	{"step, no provider", awslocal.RoleBuildTags("step") + ",keel_no_anthropic,keel_no_openai,keel_no_bedrock", "step"},
	{"approval", awslocal.RoleBuildTags("approval"), "approval"},
	{"finalize", awslocal.RoleBuildTags("finalize"), "finalize"},
	{"schedule", awslocal.RoleBuildTags("schedule"), "schedule"},
	{"sweep", awslocal.RoleBuildTags("sweep"), "sweep"},
	{"task (Fargate image, every provider)", awslocal.RoleBuildTags("task"), ""},
	{"task, anthropic only", awslocal.RoleBuildTags("task") + ",keel_no_openai,keel_no_bedrock", ""},
}

// events are what each role is invoked with.
var events = map[string]string{
	"api": `{"version":"2.0","routeKey":"$default","rawPath":"/healthz","rawQueryString":"","headers":{},` +
		`"requestContext":{"http":{"method":"GET","path":"/healthz","protocol":"HTTP/1.1","sourceIp":"127.0.0.1"},"requestId":"bench","stage":"$default"},"isBase64Encoded":false}`,
	"step": `{}`, "approval": `{}`, "finalize": `{}`, "schedule": `{}`, "sweep": `{}`,
}

// wantError is the error each non-api role answers its empty event with.
var wantError = map[string]string{
	"step": "run_id is empty", "approval": "run_id, approval_id and task_token are required",
	"finalize": "run_id is empty", "schedule": "schedule_name", "sweep": "runs",
}

// Result is one variant's figures (milliseconds).
type Result struct {
	variant
	ARM64Bytes  int64     `json:"arm64_bytes"`
	OwnToNextMS []float64 `json:"own_exec_to_next_ms,omitempty"`
	OwnMS       []float64 `json:"own_exec_to_answer_ms,omitempty"`
	OwnCPUMS    []float64 `json:"own_cpu_to_answer_ms,omitempty"`
	RIEStartMS  []float64 `json:"rie_own_start_ms,omitempty"`
	RIEMS       []float64 `json:"rie_invoke_to_answer_ms,omitempty"`
	Median      struct {
		OwnToNext, Own, OwnCPU, RIEStart, RIE, RIEOverhead float64
	} `json:"median_ms"`
	Error string `json:"error,omitempty"`
	// Before is the same variant built from the -before checkout,
	// measured in the same run, cold start for cold start alternating.
	Before *Result `json:"before,omitempty"`
}

func main() {
	rie := flag.String("rie", "bin/aws-lambda-rie", "the aws-lambda-rie binary")
	n := flag.Int("n", 5, "cold starts per variant and way")
	app := flag.String("app", "./cmd/keel", "the main package")
	only := flag.String("only", "", "measure only the variants whose name contains this")
	out := flag.String("json", "bench/results/lambda.json", "write the results here as JSON (empty: do not)")
	before := flag.String("before", "", "also measure each variant built from this checkout of the module (an older commit), alternating with this one")
	flag.Parse()
	if *n < 1 {
		fmt.Fprintln(os.Stderr, "bench-lambda: -n must be at least 1")
		os.Exit(2)
	}
	if err := run(context.Background(), *rie, *app, *only, *before, *n, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench-lambda:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, rie, app, only, before string, n int, out string) error {
	rie, err := filepath.Abs(rie)
	if err != nil {
		return err
	}
	if before != "" {
		if before, err = filepath.Abs(before); err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(before, "go.mod")); err != nil {
			return fmt.Errorf("-before: %w (want a checkout of the module)", err)
		}
	}
	if _, err := os.Stat(rie); err != nil {
		return fmt.Errorf("-rie: %w (make bench-lambda installs it)", err)
	}
	dir, err := os.MkdirTemp("", "keel-bench-lambda-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var results []Result
	for i, v := range variants {
		if only != "" && !strings.Contains(v.Name, only) {
			continue
		}
		res := Result{variant: v}
		runs := []*Result{&res}
		dirs := []string{""}
		if before != "" {
			res.Before = &Result{variant: v}
			runs, dirs = append(runs, res.Before), append(dirs, before)
		}
		var hosts []string
		for j, r := range runs {
			arm := filepath.Join(dir, fmt.Sprintf("arm64-%d-%d", i, j), "bootstrap")
			if err := build(ctx, dirs[j], app, v.Tags, "arm64", arm); err != nil {
				return err
			}
			fi, err := os.Stat(arm)
			if err != nil {
				return err
			}
			r.ARM64Bytes = fi.Size()
			if v.Role != "" {
				host := filepath.Join(dir, fmt.Sprintf("host-%d-%d", i, j), "bootstrap")
				if err := build(ctx, dirs[j], app, v.Tags, runtime.GOARCH, host); err != nil {
					return err
				}
				hosts = append(hosts, host)
			}
		}
		if v.Role != "" {
			if err := measure(ctx, rie, hosts, n, runs); err != nil {
				res.Error = err.Error()
			}
		}
		fmt.Fprintf(os.Stderr, "bench-lambda: %s: %.1f MB, own %v ms, rie %v ms %s\n", v.Name, float64(res.ARM64Bytes)/1e6, res.OwnMS, res.RIEMS, res.Error)
		results = append(results, res)
	}
	print(os.Stdout, results, n)
	if out == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(map[string]any{"date": time.Now().UTC().Format(time.RFC3339), "goarch_start": runtime.GOARCH,
		"cold_starts": n, "results": results}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(b, '\n'), 0o644)
}

// measure runs n cold starts of each bootstrap each way, alternating
// (own, rie; this build, the -before build), so that a burst of load on
// the machine falls on all of them.
func measure(ctx context.Context, rie string, bootstraps []string, n int, res []*Result) error {
	role := res[0].Role
	env := roleEnv(role)
	for range n {
		for j, bootstrap := range bootstraps {
			o, err := runOwn(ctx, bootstrap, env, events[role], 30*time.Second)
			if err != nil {
				return fmt.Errorf("own runtime API: %w", err)
			}
			if err := checkAnswer(role, o.Errored, o.Body); err != nil {
				return fmt.Errorf("own runtime API: %w", err)
			}
			r := res[j]
			r.OwnToNextMS = append(r.OwnToNextMS, ms(o.ToNext))
			r.OwnMS = append(r.OwnMS, ms(o.ToAnswer))
			r.OwnCPUMS = append(r.OwnCPUMS, ms(o.CPU))
		}
		for j, bootstrap := range bootstraps {
			c, err := coldStart(ctx, rie, bootstrap, role, env)
			if err != nil {
				return fmt.Errorf("rie: %w", err)
			}
			r := res[j]
			r.RIEStartMS = append(r.RIEStartMS, ms(c.listening))
			r.RIEMS = append(r.RIEMS, ms(c.answered))
		}
	}
	for _, r := range res {
		m := &r.Median
		m.OwnToNext, m.Own, m.OwnCPU, m.RIEStart, m.RIE = median(r.OwnToNextMS), median(r.OwnMS), median(r.OwnCPUMS), median(r.RIEStartMS), median(r.RIEMS)
		m.RIEOverhead = m.RIE - m.Own
	}
	return nil
}

// roleEnv is what a role needs to start: the endpoint is a closed loopback
// port (nothing is contacted; the sweep's one listing fails at once with
// one attempt) and the credentials are placeholders.
func roleEnv(role string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "LOG_LEVEL=error",
		"KEEL_ROLE=" + role, "KEEL_STORE=dynamo:keel", "KEEL_ARTIFACTS=s3:keel-artifacts",
		"KEEL_STATE_MACHINE_ARN=arn:aws:states:us-east-1:123456789012:stateMachine:keel",
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=bench", "AWS_SECRET_ACCESS_KEY=bench", "AWS_ENDPOINT_URL=http://127.0.0.1:9",
		"AWS_MAX_ATTEMPTS=1", "AWS_LAMBDA_FUNCTION_NAME=keel-" + role, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512"}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func print(w io.Writer, results []Result, n int) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "build\tarm64 bootstrap\town: exec→/next\town: exec→answer (min)\town: CPU to answer\tRIE: invoke→answer (min)\tRIE overhead\tRIE own start\ttags\n")
	row := func(name string, r Result) {
		cols := "\t\t\t\t\t"
		switch {
		case r.Error != "":
			cols = "error: " + strings.SplitN(r.Error, "\n", 2)[0] + "\t\t\t\t\t"
		case r.Role != "" && len(r.OwnMS) > 0:
			m := r.Median
			cols = fmt.Sprintf("%.1f ms\t%.1f ms (%.1f)\t%.1f ms\t%.1f ms (%.1f)\t%.1f ms\t%.1f ms",
				m.OwnToNext, m.Own, slices.Min(r.OwnMS), m.OwnCPU, m.RIE, slices.Min(r.RIEMS), m.RIEOverhead, m.RIEStart)
		}
		fmt.Fprintf(tw, "%s\t%.1f MB\t%s\t%s\n", name, float64(r.ARM64Bytes)/1e6, cols, r.Tags)
	}
	for _, r := range results {
		row(r.Name, r)
		if r.Before != nil {
			row("  before", *r.Before)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "(medians of %d cold starts each way, minimum in brackets; MB = 10^6 bytes)\n", n)
}

// build compiles app (a package path relative to dir, the module's
// checkout; "" is the working directory).
func build(ctx context.Context, dir, app, tags, arch, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-tags", tags, "-ldflags", "-s -w", "-o", out, app)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build -tags %s (%s): %w", tags, arch, err)
	}
	return nil
}
