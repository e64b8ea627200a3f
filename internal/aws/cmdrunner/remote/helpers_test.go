package remote_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/keelrun/keel/internal/aws/cmdrunner/remote"
	keels3 "github.com/keelrun/keel/internal/backend/artifact/s3"
	"github.com/keelrun/keel/internal/proof/awslocal"
	"github.com/keelrun/keel/internal/runspace"
	"github.com/keelrun/keel/internal/sandbox"
	"github.com/keelrun/keel/internal/testbin"
)

// The runner's own (fake) credentials: what Lambda gives the runtime.
// A command must never see them.
const (
	canaryKey    = "AKIACANARYRUNNER0001"
	canarySecret = "canary-secret-of-the-runner-role"
	function     = "keel-cmdrunner"
	bucket       = "keel-test"
)

// world is moto (S3 and Lambda) with the runner's real binary under
// aws-lambda-rie as the function, and a worker's side: the S3 store, the
// presigner, and a Lambda client whose requests a proxy records.
type world struct {
	s3       *awss3.Client
	store    *keels3.Store
	client   *remote.Client
	runner   *awslocal.Sandbox
	mu       sync.Mutex
	tenants  []string // X-Amz-Tenant-Id of each Invoke
	rootBase string
}

// rieBinary finds aws-lambda-rie: KEEL_AWSLOCAL_RIE, the repository's
// bin/, or PATH.
func rieBinary(t *testing.T, root string) string {
	if p := os.Getenv("KEEL_AWSLOCAL_RIE"); p != "" {
		return p
	}
	if p := filepath.Join(root, "bin", "aws-lambda-rie"); fileExists(p) {
		return p
	}
	if p, err := exec.LookPath("aws-lambda-rie"); err == nil {
		return p
	}
	t.Skip("no aws-lambda-rie (KEEL_AWSLOCAL_RIE, bin/ or PATH; make aws-local-e2e installs it)")
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func moduleRoot(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

func newWorld(t *testing.T) *world {
	t.Helper()
	testbin.SkipShort(t, "starts moto and the Lambda Runtime Interface Emulator")
	if why := awslocal.MotoAvailable("python3"); why != "" {
		t.Skip(why)
	}
	root := moduleRoot(t)
	rie := rieBinary(t, root)
	ctx := context.Background()
	dir := t.TempDir()
	w := &world{}
	// The runner's binary and directory must be reachable by the uid
	// commands run as (the test runs as root: commands as 65534), as
	// /var/task and /tmp are on Lambda.
	var err error
	w.rootBase, err = os.MkdirTemp("", "keel-cmdroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(w.rootBase) })
	if err := os.Chmod(w.rootBase, 0o711); err != nil {
		t.Fatal(err)
	}
	bootstrap := filepath.Join(w.rootBase, "bootstrap")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bootstrap, "./cmd/keel-cmdrunner")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the runner: %v\n%s", err, out)
	}
	m, err := awslocal.StartMoto(ctx, "python3", dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	w.s3 = awss3.New(awss3.Options{Region: awslocal.Region, BaseEndpoint: aws.String(m.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	if _, err := w.s3.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	opts := keels3.Options{Bucket: bucket}
	if w.store, err = keels3.New(w.s3, opts); err != nil {
		t.Fatal(err)
	}
	pre, err := keels3.NewPresigner(w.s3, opts)
	if err != nil {
		t.Fatal(err)
	}
	w.createFunction(t, m.URL)
	env := append(awslocal.MinimalEnv(dir), "AWS_REGION="+awslocal.Region, "AWS_ACCESS_KEY_ID="+canaryKey,
		"AWS_SECRET_ACCESS_KEY="+canarySecret, "AWS_SESSION_TOKEN=canary-token", "AWS_LAMBDA_FUNCTION_NAME="+function,
		"KEEL_COMMAND_ROOT="+filepath.Join(w.rootBase, "cmd"))
	if w.runner, err = awslocal.StartSandbox(ctx, rie, bootstrap, function, env, dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.runner.Kill)
	if err := m.Route(function, w.runner.URL); err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(m.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	rec := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		w.tenants = append(w.tenants, r.Header.Get("X-Amz-Tenant-Id"))
		w.mu.Unlock()
		proxy.ServeHTTP(rw, r)
	}))
	t.Cleanup(rec.Close)
	w.client = &remote.Client{Function: function, Presign: pre, Artifacts: w.store,
		Invoke: &remote.LambdaInvoker{Endpoint: rec.URL, Region: awslocal.Region, Creds: credentials.NewStaticCredentialsProvider("test", "test", "")}}
	return w
}

// createFunction registers the function with moto (its code runs from
// the host-built bootstrap under the emulator; the package is a README).
func (w *world) createFunction(t *testing.T, endpoint string) {
	t.Helper()
	ctx := context.Background()
	api := &awslocal.LambdaAPI{Endpoint: endpoint, Region: awslocal.Region, Creds: credentials.NewStaticCredentialsProvider("test", "test", "")}
	if err := api.CreateRole(ctx, "cmdrunner", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}`); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	f, _ := zw.Create("README")
	_, _ = io.WriteString(f, "the keel-cmdrunner bootstrap runs from the host under aws-lambda-rie\n")
	_ = zw.Close()
	err := api.CreateFunction(ctx, map[string]any{"FunctionName": function, "Runtime": "provided.al2023", "Handler": "bootstrap",
		"Role": "arn:aws:iam::" + awslocal.Account + ":role/cmdrunner", "Timeout": 120,
		"Code": map[string]any{"ZipFile": base64.StdEncoding.EncodeToString(buf.Bytes())}})
	if err != nil {
		t.Fatal(err)
	}
}

// manager is a worker's workspaces with commands through the runner.
func (w *world) manager(t *testing.T, p sandbox.Policy) *runspace.Manager {
	t.Helper()
	m, err := runspace.New(runspace.Config{Root: t.TempDir(), Artifacts: w.store, Remote: w.client, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
