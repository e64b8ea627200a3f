package devserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	miniserver "github.com/truora/minidyn/server"

	"github.com/keelrun/keel/internal/aws/awsbackend"
	"github.com/keelrun/keel/internal/backend/store/dynamo"
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/fixture"
	"github.com/keelrun/keel/internal/fixture/fixturetest"
	"github.com/keelrun/keel/internal/local/devserver"
)

// awsEndpoint serves DynamoDB (in-process minidyn) and S3 (in-process
// gofakes3) on one URL, the way LocalStack does behind AWS_ENDPOINT_URL:
// DynamoDB requests name their operation in X-Amz-Target.
func awsEndpoint(t *testing.T) aws.Config {
	t.Helper()
	ddb, s3 := miniserver.NewServer(), gofakes3.New(s3mem.New()).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.") {
			ddb.ServeHTTP(w, r)
			return
		}
		s3.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")}
}

// TestResearchRunOnDynamoAndS3 is `keel dev --store dynamo --artifacts s3`:
// the dev server with its run store in DynamoDB and its artifacts in S3
// (only Step Functions state stays in DIR/sfn.db) drives one research run
// to the approval, through it, to completion.
func TestResearchRunOnDynamoAndS3(t *testing.T) {
	ctx := context.Background()
	awsCfg := awsEndpoint(t)
	if err := dynamo.CreateTable(ctx, dynamodb.NewFromConfig(awsCfg), "keel", time.Minute); err != nil {
		t.Fatal(err)
	}
	s3c := awss3.NewFromConfig(awsCfg, func(o *awss3.Options) { o.UsePathStyle = true })
	if _, err := s3c.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String("keel-artifacts")}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	env := map[string]string{"KEEL_STORE": "dynamo:keel", "KEEL_ARTIFACTS": "s3:keel-artifacts", "KEEL_DATA_DIR": dir}
	cfg, err := config.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.S3PathStyle = true
	open := awsbackend.Backends(awsCfg, awsbackend.Options{S3PathStyle: true})
	rt, err := compose.Open(ctx, cfg, fixturetest.App(fixture.DirPublisher{Dir: filepath.Join(dir, "published")}),
		compose.Backends{AWSStore: open.Store, AWSArtifacts: open.Artifacts})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := devserver.Start(ctx, devserver.Config{DataDir: dir, Addr: "127.0.0.1:0", Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })

	call := func(method, path, body string, out any) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+srv.Token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if out != nil && resp.StatusCode < 300 {
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatalf("%s %s: %s: %v", method, path, b, err)
			}
		}
		if resp.StatusCode >= 300 {
			t.Logf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		return resp.StatusCode
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) { // a bound against hanging, not a timing assertion
				t.Fatalf("gave up waiting for %s", what)
			}
		}
	}

	var created struct {
		RunID string `json:"run_id"`
	}
	if code := call("POST", "/v1/runs", `{"agent":"research","input":"What changed in durable execution?"}`, &created); code != 201 {
		t.Fatalf("create: %d", code)
	}
	type approval struct {
		ApprovalID string `json:"approval_id"`
		ArgsHash   string `json:"args_hash"`
		Tool       string `json:"tool"`
	}
	var aps struct{ Approvals []approval }
	waitFor("the approval", func() bool {
		call("GET", "/v1/runs/"+created.RunID+"/approvals", "", &aps)
		return len(aps.Approvals) > 0
	})
	ap := aps.Approvals[0]
	if code := call("POST", fmt.Sprintf("/v1/runs/%s/approvals/%s", created.RunID, ap.ApprovalID),
		`{"decision":"approve","args_hash":"`+ap.ArgsHash+`"}`, nil); code != 200 {
		t.Fatalf("approve: %d", code)
	}
	var got struct {
		Status string `json:"status"`
		Output string `json:"output"`
	}
	waitFor("the run to complete", func() bool {
		call("GET", "/v1/runs/"+created.RunID, "", &got)
		return got.Status == "completed" || got.Status == "failed"
	})
	if got.Status != "completed" {
		t.Fatalf("run %+v", got)
	}

	var page struct {
		Events []struct {
			Seq  int64           `json:"seq"`
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		Done bool `json:"done"`
	}
	call("GET", "/v1/runs/"+created.RunID+"/events?limit=1000", "", &page)
	var log bytes.Buffer
	seen := map[string]int{}
	for i, e := range page.Events {
		seen[e.Type]++
		fmt.Fprintf(&log, "%3d %s %s\n", e.Seq, e.Type, e.Data)
		if e.Seq != int64(i+1) {
			t.Errorf("event %d has seq %d: the log has a gap", i+1, e.Seq)
		}
	}
	t.Logf("event log:\n%s", log.String())
	for _, want := range []string{"run_created", "approval_requested", "approval_granted", "op_intent", "op_succeeded", "run_completed"} {
		if seen[want] == 0 {
			t.Errorf("no %s event", want)
		}
	}
	if !page.Done || seen["op_succeeded"] != 1 {
		t.Errorf("done=%v, %d publications", page.Done, seen["op_succeeded"])
	}
	pubs, _ := filepath.Glob(filepath.Join(dir, "published", "*.md"))
	if len(pubs) != 1 {
		t.Errorf("%d published files, want 1", len(pubs))
	}
	// The run store is DynamoDB, not a file; Step Functions state is local.
	if _, err := os.Stat(filepath.Join(dir, "sfn.db")); err != nil {
		t.Errorf("no sfn.db: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "keel.db")); err == nil {
		t.Error("keel.db exists: the runs went to SQLite")
	}
	// The draft went to S3.
	objs, err := s3c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String("keel-artifacts"),
		Prefix: aws.String("runs/" + created.RunID + "/")})
	if err != nil || len(objs.Contents) == 0 {
		t.Errorf("no artifacts of the run in S3 (%v)", err)
	}
}

// TestSecondDevSaysWhere: a second keel dev on a data directory another
// one holds is refused naming the other one's process and URL, so the
// user can go to it.
func TestSecondDevSaysWhere(t *testing.T) {
	dir := t.TempDir()
	first, err := devserver.AcquireLock(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if err := os.WriteFile(filepath.Join(dir, "url"), []byte("http://127.0.0.1:8080\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = devserver.AcquireLock(dir, "")
	want := fmt.Sprintf("in use by another keel dev (the same file, whatever path, link or mount names it): resource temporarily unavailable; "+
		"the other one is process %d, serving at http://127.0.0.1:8080", os.Getpid())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err %v, want %q", err, want)
	}
}
