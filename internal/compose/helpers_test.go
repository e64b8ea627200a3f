package compose_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	miniserver "github.com/truora/minidyn/server"

	"github.com/keelrun/keel/internal/aws/sfnclient"
	"github.com/keelrun/keel/internal/aws/states"
	"github.com/keelrun/keel/internal/backend/store/dynamo"
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/fixture"
	"github.com/keelrun/keel/internal/fixture/fixturetest"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/stepfunctions"
)

// The tests run the entrypoints as Lambda runs them — lambda.NewHandler(
// fn.Handle).Invoke on event JSON — against one HTTP endpoint that routes
// like LocalStack's single port: DynamoDB requests (X-Amz-Target
// DynamoDB_20120810.*) to an in-process minidyn server, Step Functions
// requests (AWSStepFunctions.*) to Keel's local executor (the same API
// `keel dev` serves), and the rest to an in-process gofakes3 S3 server.
// Every client is the real aws-sdk-go-v2 client via BaseEndpoint. The
// executor runs stepfunctions/run.asl.json with its Lambda tasks bound to
// the very functions under test, so a run goes through the state machine
// as on AWS. The minidyn and gofakes3 differences from AWS are listed in
// internal/backend/store/dynamo and internal/backend/artifact/s3's tests; one more shows
// here: minidyn sends no X-Amz-Crc32 header (DynamoDB always does), and the
// SDK's DynamoDB client then compares the body with checksum 0 when it
// closes it, so the tasks/fargate child (whose SDK logs to stderr) logs
// "failed to close HTTP response body ... did not match expected
// checksum, 0, N". The responses themselves are read and used normally.

const (
	machineName = "keel-run"
	stepFn      = "keel-step"
	approvalFn  = "keel-approval"
	finalizeFn  = "keel-finalize"
	table       = "keel-entry-test"
	bucket      = "keel-entry-artifacts"
)

// router is the single endpoint.
type router struct {
	ddb, s3 http.Handler
	sfn     atomic.Pointer[http.Handler]
}

func (r *router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	target := req.Header.Get("X-Amz-Target")
	switch {
	case strings.HasPrefix(target, "DynamoDB_20120810."):
		r.ddb.ServeHTTP(w, req)
	case strings.HasPrefix(target, "AWSStepFunctions."):
		h := r.sfn.Load()
		if h == nil {
			http.Error(w, `{"__type":"ServiceUnavailable","message":"executor not started"}`, http.StatusServiceUnavailable)
			return
		}
		(*h).ServeHTTP(w, req)
	default:
		r.s3.ServeHTTP(w, req)
	}
}

// world is the endpoint, the executor and the five functions.
type world struct {
	dir        string
	url        string
	awsCfg     aws.Config
	cfg        config.Config
	deps       compose.Deps
	exec       *states.Executor
	machineARN string
	raw        *sfn.Client    // for DescribeExecution in assertions
	store      store.Store    // the functions' store, opened separately for assertions
	arts       artifact.Store // and their artifacts

	api      *compose.API
	step     *compose.Step
	approval *compose.Approval
	finalize *compose.Finalize
	schedule *compose.Schedule
}

type backend int

const (
	onSQLite backend = iota // SQLite store, file artifacts
	onAWS                   // DynamoDB (minidyn) and S3 (gofakes3)
)

// mapenv is a getenv over a map.
func mapenv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// worldOptions tune newWorld.
type worldOptions struct {
	// extraEnv is added to the functions' environment.
	extraEnv map[string]string
	// tasks runs the RunOnFargate state; nil makes spills fail.
	tasks func(w *world) states.TaskRunner
	// machines are extra state machines to register (name → definition).
	machines map[string]string
}

func newWorld(t *testing.T, be backend, opts worldOptions) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{dir: t.TempDir()}
	rt := &router{ddb: miniserver.NewServer(), s3: gofakes3.New(s3mem.New()).Server()}
	srv := httptest.NewServer(rt)
	t.Cleanup(srv.Close)
	w.url = srv.URL
	w.awsCfg = aws.Config{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	}
	w.raw = sfn.NewFromConfig(w.awsCfg)
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))

	sfnStore, err := states.OpenStore(ctx, filepath.Join(w.dir, "sfn.db"))
	if err != nil {
		t.Fatal(err)
	}
	// The executor's ARNs are known before it exists.
	probe, err := states.New(states.Config{Store: sfnStore})
	if err != nil {
		t.Fatal(err)
	}
	w.machineARN = probe.StateMachineARN(machineName)

	vars := map[string]string{
		"KEEL_STATE_MACHINE_ARN": w.machineARN,
		"KEEL_OWNER":             "",
	}
	for k, v := range opts.extraEnv {
		vars[k] = v
	}
	switch be {
	case onAWS:
		vars["KEEL_TABLE"] = table
		vars["KEEL_BUCKET"] = bucket
		vars["AWS_ENDPOINT_URL"] = srv.URL
		if err := dynamo.CreateTable(ctx, dynamodb.NewFromConfig(w.awsCfg), table, time.Minute); err != nil {
			t.Fatalf("create table: %v", err)
		}
		if _, err := awss3.NewFromConfig(w.awsCfg, func(o *awss3.Options) { o.UsePathStyle = true }).
			CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatalf("create bucket: %v", err)
		}
		vars["KEEL_ROLE"] = "step" // the AWS checks: one table and one bucket for all
		if w.cfg, err = config.FromEnv(mapenv(vars)); err != nil {
			t.Fatal(err)
		}
		w.cfg.Role = ""
		w.deps.Backends = compose.AWSBackends(w.cfg, w.awsCfg, log)
	case onSQLite:
		vars["KEEL_STORE"] = "sqlite:" + filepath.Join(w.dir, "keel.db")
		vars["KEEL_ARTIFACTS"] = "fs:" + filepath.Join(w.dir, "artifacts")
		vars["KEEL_SSE_MAX_DURATION"] = "1s"
		if w.cfg, err = config.FromEnv(mapenv(vars)); err != nil {
			t.Fatal(err)
		}
	}
	client, err := sfnclient.New(w.raw)
	if err != nil {
		t.Fatal(err)
	}
	w.deps = compose.Deps{Config: w.cfg, App: fixturetest.App(fixture.DirPublisher{Dir: filepath.Join(w.dir, "published")}),
		Backends: w.deps.Backends, SFN: client, Logger: log}

	if w.api, err = compose.NewAPI(ctx, w.deps); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.api.Close() })
	if w.step, err = compose.NewStep(ctx, w.deps); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.step.Close() })
	if w.approval, err = compose.NewApproval(ctx, w.deps); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.approval.Close() })
	if w.finalize, err = compose.NewFinalize(ctx, w.deps); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.finalize.Close() })
	if w.schedule, err = compose.NewSchedule(ctx, w.deps); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.schedule.Close() })
	parts, err := compose.Open(ctx, w.cfg, w.deps.App, w.deps.Backends)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { parts.Close() })
	w.store, w.arts = parts.Store, parts.Artifacts

	cfg := states.Config{Store: sfnStore, Logger: log, Lambdas: map[string]states.LambdaFunc{
		stepFn:     invoker(w.step.Handle),
		approvalFn: invoker(w.approval.Handle),
		finalizeFn: invoker(w.finalize.Handle),
	}}
	if opts.tasks != nil {
		cfg.Tasks = opts.tasks(w)
	}
	if w.exec, err = states.New(cfg); err != nil {
		t.Fatal(err)
	}
	machine, err := states.Load(stepfunctions.Definition, map[string]string{
		"StepFunctionArn": stepFn, "ApprovalFunctionArn": approvalFn, "FinalizeFunctionArn": finalizeFn,
		"ClusterArn": "local", "TaskDefinitionArn": "keel-task", "SubnetIds": "subnet-1",
		"SecurityGroupIds": "sg-1", "AssignPublicIp": "DISABLED", "ContainerName": "keel",
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.exec.Register(ctx, machineName, machine); err != nil {
		t.Fatal(err)
	}
	for name, def := range opts.machines {
		m, err := states.Load([]byte(def), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.exec.Register(ctx, name, m); err != nil {
			t.Fatal(err)
		}
	}
	var h http.Handler = states.NewHandler(w.exec, log)
	rt.sfn.Store(&h)
	if err := w.exec.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// Registered last, so it runs first: no execution calls a closed store.
	t.Cleanup(w.exec.Close)
	return w
}

// invoker binds a typed handler to the executor through aws-lambda-go's
// own JSON adapter, exactly as the Lambda runtime calls it.
func invoker(handler any) states.LambdaFunc {
	h := lambda.NewHandler(handler)
	return func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
		return h.Invoke(ctx, payload)
	}
}

// errorType is the errorType aws-lambda-go reports for a handler error
// (lambda/errors.go: the returned error's type name, pointer removed),
// which Step Functions matches in Retry and Catch.
func errorType(err error) string {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// readJSON reads testdata/name.
func readJSON(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// gatewayEvent reads an API Gateway event from testdata and lets edit
// change it (method, path, body) before it is encoded again.
func gatewayEvent(t *testing.T, name string, edit func(*events.APIGatewayV2HTTPRequest)) []byte {
	t.Helper()
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(readJSON(t, name), &ev); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&ev)
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// request sets an event's method, path, query and JSON body.
func request(method, path, body string) func(*events.APIGatewayV2HTTPRequest) {
	return func(ev *events.APIGatewayV2HTTPRequest) {
		p, q, _ := strings.Cut(path, "?")
		ev.RequestContext.HTTP.Method = method
		ev.RawPath, ev.RequestContext.HTTP.Path, ev.RawQueryString = p, p, q
		ev.Body, ev.IsBase64Encoded = body, false
		if ev.Headers == nil {
			ev.Headers = map[string]string{}
		}
		delete(ev.Headers, "idempotency-key")
		delete(ev.Headers, "content-length")
		if body != "" {
			ev.Headers["content-type"] = "application/json"
		}
	}
}

// callAPI invokes the api function on an event and decodes its response.
func (w *world) callAPI(t *testing.T, event []byte) events.APIGatewayV2HTTPResponse {
	t.Helper()
	out, err := lambda.NewHandler(w.api.Handle).Invoke(context.Background(), event)
	if err != nil {
		t.Fatalf("api: %v", err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("api response %s: %v", out, err)
	}
	return resp
}

// waitFor polls cond until it holds; the bound only keeps a broken run
// from hanging the test, it is not a performance assertion.
func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// describe returns an execution's status and output through the real SDK.
func (w *world) describe(t *testing.T, name, machine string) (string, string) {
	t.Helper()
	arn := strings.Replace(w.exec.StateMachineARN(machine), ":stateMachine:", ":execution:", 1) + ":" + name
	out, err := w.raw.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	if err != nil {
		return "", fmt.Sprintf("describe %s: %v", arn, err)
	}
	return string(out.Status), aws.ToString(out.Output)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
