package devserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keelrun/keel/internal/aws/awsbackend"
	"github.com/keelrun/keel/internal/aws/sfnclient"
	"github.com/keelrun/keel/internal/backend/store/dynamo"
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/fixture"
	"github.com/keelrun/keel/internal/fixture/fixturetest"
	"github.com/keelrun/keel/internal/local/devserver"
	"github.com/keelrun/keel/stepfunctions"
)

// backend is where a test's keel dev keeps its runs.
type backend string

const (
	onSQLite backend = "sqlite" // DATA/keel.db, artifacts in DATA
	onDynamo backend = "dynamo" // DynamoDB (in-process minidyn), artifacts in S3 (gofakes3)
)

var backends = []backend{onSQLite, onDynamo}

// dev is one keel dev under test.
type dev struct {
	t   *testing.T
	srv *devserver.Server
	rt  *compose.Runtime
}

// devOn starts keel dev with its runs on be and the research agent, which
// edit (when given) may change. Its task command is /bin/false (no test
// here spills), which gives it the local Step Functions endpoint the
// tests read executions through.
func devOn(t *testing.T, be backend, edit func(*compose.App)) *dev {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	env := map[string]string{"KEEL_DATA_DIR": dir}
	var bs compose.Backends
	if be == onDynamo {
		awsCfg := awsEndpoint(t)
		if err := dynamo.CreateTable(ctx, dynamodb.NewFromConfig(awsCfg), "keel", time.Minute); err != nil {
			t.Fatal(err)
		}
		s3c := awss3.NewFromConfig(awsCfg, func(o *awss3.Options) { o.UsePathStyle = true })
		if _, err := s3c.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String("keel-artifacts")}); err != nil {
			t.Fatal(err)
		}
		env["KEEL_STORE"], env["KEEL_ARTIFACTS"] = "dynamo:keel", "s3:keel-artifacts"
		open := awsbackend.Backends(awsCfg, awsbackend.Options{S3PathStyle: true})
		bs = compose.Backends{AWSStore: open.Store, AWSArtifacts: open.Artifacts}
	}
	cfg, err := config.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.S3PathStyle = true
	app := fixturetest.App(fixture.DirPublisher{Dir: filepath.Join(dir, "published")})
	if edit != nil {
		edit(&app)
	}
	rt, err := compose.Open(ctx, cfg, app, bs)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := devserver.Start(ctx, devserver.Config{DataDir: dir, Addr: "127.0.0.1:0", Runtime: rt, TaskCommand: []string{"/bin/false"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return &dev{t: t, srv: srv, rt: rt}
}

// call makes an API request with the dev token and headers (name, value
// pairs), and decodes a 2xx answer into out when given.
func (d *dev) call(method, path, body string, out any, headers ...string) (int, string) {
	d.t.Helper()
	req, err := http.NewRequest(method, d.srv.URL+path, strings.NewReader(body))
	if err != nil {
		d.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.srv.Token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			d.t.Fatalf("%s %s: %s: %v", method, path, b, err)
		}
	}
	return resp.StatusCode, string(b)
}

// until polls cond; the bound only keeps a broken run from hanging the
// test, it is no timing assertion.
func (d *dev) until(what string, cond func() bool) {
	d.t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			d.t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// executionStatus reads the status of the run's first execution through
// the local Step Functions endpoint, as the task children reach it.
func (d *dev) executionStatus(runID string) string {
	d.t.Helper()
	c, err := awsbackend.LocalSFN(d.srv.SFNURL, d.srv.Token)
	if err != nil {
		d.t.Fatal(err)
	}
	const machine = "arn:aws:states:us-east-1:000000000000:stateMachine:keel-run"
	ex, err := c.DescribeExecution(context.Background(), sfnclient.ExecutionARN(machine, stepfunctions.ExecutionName(runID, 0)))
	if err != nil {
		d.t.Fatalf("describe the execution of %s: %v", runID, err)
	}
	return ex.Status
}

// bearer adds the dev token to every request of an MCP client.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects the Go SDK's MCP client to keel dev's /v1/mcp, as an
// IDE configured with its URL and token does.
func (d *dev) mcpSession() *mcp.ClientSession {
	d.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "ide", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: d.srv.URL + "/v1/mcp",
		HTTPClient: &http.Client{Transport: bearer(d.srv.Token)}}, nil)
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// callTool calls an MCP tool and decodes its JSON answer into out; it
// returns the answer's text and whether the tool reported an error.
func (d *dev) callTool(cs *mcp.ClientSession, name string, args, out any) (string, bool) {
	d.t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		d.t.Fatalf("%s: %v", name, err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError && out != nil {
		if err := json.Unmarshal([]byte(text), out); err != nil {
			d.t.Fatalf("%s: %v: %s", name, err, text)
		}
	}
	return text, res.IsError
}
