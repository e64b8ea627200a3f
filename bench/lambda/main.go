// Command lambda measures the deployed binary: for each set of build tags,
// the size of the linux/arm64 bootstrap (-trimpath -ldflags "-s -w", as
// the CDK app builds it) and the time from process start to the first
// answered invocation under the AWS Lambda Runtime Interface Emulator
// (aws-lambda-rie, on this machine's architecture): the api role answering
// an API Gateway (payload 2.0) GET /healthz, which needs no AWS service.
//
//	go run ./bench/lambda -rie bin/aws-lambda-rie      (make bench-lambda)
//
// RIE starts the bootstrap when the first invocation arrives, so the time
// measured is exec, Go runtime and Keel initialisation (configuration, AWS
// clients, the agents) and the one request. Each figure is the median of
// -n cold starts, each in a fresh RIE.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// variant is one set of build tags.
type variant struct {
	Name string `json:"name"`
	Tags string `json:"tags"`
}

var variants = []variant{
	{"default (every part)", "lambda.norpc"},
	{"keel_lambda, every provider", "lambda.norpc,keel_lambda"},
	{"keel_lambda, anthropic only", "lambda.norpc,keel_lambda,keel_no_openai,keel_no_bedrock"},
	{"keel_lambda, openai only", "lambda.norpc,keel_lambda,keel_no_anthropic,keel_no_bedrock"},
	{"keel_lambda, bedrock only", "lambda.norpc,keel_lambda,keel_no_anthropic,keel_no_openai"},
	{"keel_lambda, no provider", "lambda.norpc,keel_lambda,keel_no_anthropic,keel_no_openai,keel_no_bedrock"},
}

// Result is one variant's figures.
type Result struct {
	variant
	ARM64Bytes int64     `json:"arm64_bytes"`
	StartMS    []float64 `json:"start_ms"`
	MedianMS   float64   `json:"median_ms"`
	Error      string    `json:"error,omitempty"`
}

func main() {
	rie := flag.String("rie", "bin/aws-lambda-rie", "the aws-lambda-rie binary")
	n := flag.Int("n", 5, "cold starts per variant")
	app := flag.String("app", "./cmd/keel", "the main package")
	out := flag.String("json", "bench/results/lambda.json", "write the results here as JSON (empty: do not)")
	flag.Parse()
	if err := run(context.Background(), *rie, *app, *n, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench-lambda:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, rie, app string, n int, out string) error {
	rie, err := filepath.Abs(rie)
	if err != nil {
		return err
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
		res := Result{variant: v}
		arm := filepath.Join(dir, fmt.Sprintf("arm64-%d", i), "bootstrap")
		host := filepath.Join(dir, fmt.Sprintf("host-%d", i), "bootstrap")
		if err := build(ctx, app, v.Tags, "arm64", arm); err != nil {
			return err
		}
		fi, err := os.Stat(arm)
		if err != nil {
			return err
		}
		res.ARM64Bytes = fi.Size()
		if err := build(ctx, app, v.Tags, runtime.GOARCH, host); err != nil {
			return err
		}
		for range n {
			ms, err := coldStart(ctx, rie, host)
			if err != nil {
				res.Error = err.Error()
				break
			}
			res.StartMS = append(res.StartMS, ms)
		}
		if len(res.StartMS) > 0 {
			s := slices.Clone(res.StartMS)
			slices.Sort(s)
			res.MedianMS = s[len(s)/2]
		}
		fmt.Fprintf(os.Stderr, "bench-lambda: %s: %.1f MB, %v ms %s\n", v.Name, float64(res.ARM64Bytes)/1e6, res.StartMS, res.Error)
		results = append(results, res)
	}
	print(os.Stdout, results)
	if out == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(map[string]any{"date": time.Now().UTC().Format(time.RFC3339), "goarch_start": runtime.GOARCH, "results": results}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(b, '\n'), 0o644)
}

func print(w io.Writer, results []Result) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "build\ttags\tarm64 bootstrap\tstart → first answer (median)\truns\n")
	for _, r := range results {
		start := fmt.Sprintf("%.1f ms", r.MedianMS)
		if r.Error != "" {
			start = "error: " + r.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f MB\t%s\t%d\n", r.Name, r.Tags, float64(r.ARM64Bytes)/1e6, start, len(r.StartMS))
	}
	tw.Flush()
}

func build(ctx context.Context, app, tags, arch, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-tags", tags, "-ldflags", "-s -w", "-o", out, app)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build -tags %s (%s): %w", tags, arch, err)
	}
	return nil
}

// healthz is an API Gateway HTTP API (payload 2.0) event for GET /healthz.
const healthz = `{"version":"2.0","routeKey":"$default","rawPath":"/healthz","rawQueryString":"","headers":{},` +
	`"requestContext":{"http":{"method":"GET","path":"/healthz","protocol":"HTTP/1.1","sourceIp":"127.0.0.1"},"requestId":"bench","stage":"$default"},"isBase64Encoded":false}`

// coldStart starts a fresh RIE on loopback ports with the bootstrap as the
// api role and returns the milliseconds from sending the first invocation
// (which makes RIE start the bootstrap) to its answer.
func coldStart(ctx context.Context, rie, bootstrap string) (float64, error) {
	rieAddr, apiAddr, err := freeAddr(), freeAddr(), error(nil)
	cmd := exec.CommandContext(ctx, rie, "--runtime-interface-emulator-address", rieAddr, "--runtime-api-address", apiAddr, bootstrap)
	cmd.Dir = filepath.Dir(bootstrap)
	// Only what the api role needs: nothing is contacted to answer
	// /healthz, so the endpoint is a closed loopback port and the
	// credentials are placeholders.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "LOG_LEVEL=error",
		"KEEL_ROLE=api", "KEEL_STORE=dynamo:keel", "KEEL_ARTIFACTS=s3:keel-artifacts",
		"KEEL_STATE_MACHINE_ARN=arn:aws:states:us-east-1:123456789012:stateMachine:keel",
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=bench", "AWS_SECRET_ACCESS_KEY=bench", "AWS_ENDPOINT_URL=http://127.0.0.1:9",
		"AWS_LAMBDA_FUNCTION_NAME=keel-api", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512"}
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err = cmd.Start(); err != nil {
		return 0, err
	}
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // RIE and the bootstrap it started
		_ = cmd.Wait()
	}()
	if err := waitListen(rieAddr, 10*time.Second); err != nil {
		return 0, fmt.Errorf("%w\n%s", err, logs.String())
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	start := time.Now()
	resp, err := hc.Post("http://"+rieAddr+"/2015-03-31/functions/function/invocations", "application/json", strings.NewReader(healthz))
	if err != nil {
		return 0, fmt.Errorf("invoke: %w\n%s", err, logs.String())
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err != nil {
		return 0, err
	}
	var ans struct {
		StatusCode int    `json:"statusCode"`
		Body       string `json:"body"`
	}
	if err := json.Unmarshal(body, &ans); err != nil || ans.StatusCode != 200 || !strings.Contains(ans.Body, `"ok"`) {
		return 0, fmt.Errorf("not the healthz answer: %s\n%s", body, logs.String())
	}
	return float64(took.Microseconds()) / 1000, nil
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer l.Close()
	return l.Addr().String()
}

func waitListen(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("RIE did not listen on %s: %w", addr, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
