package awslocal

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/keelrun/keel/internal/backend/store/dynamo"
	"github.com/keelrun/keel/internal/fixture"
)

// repoRoot is the module root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// newMotoWorld starts moto and builds the bootstrap, or skips naming what
// is missing.
func newMotoWorld(t *testing.T) *World {
	t.Helper()
	if os.Getenv("KEEL_AWSLOCAL") == "" {
		t.Skip("aws-local-e2e: SKIPPED: set KEEL_AWSLOCAL=1 (make aws-local-e2e synthesizes the template, installs aws-lambda-rie and sets it)")
	}
	root := repoRoot(t)
	python := envOr("KEEL_AWSLOCAL_PYTHON", "python3")
	if why := MotoAvailable(python); why != "" {
		t.Skip("aws-local-e2e: SKIPPED: " + why)
	}
	rie := os.Getenv("KEEL_AWSLOCAL_RIE")
	if rie == "" {
		rie = filepath.Join(root, "bin", "aws-lambda-rie")
	}
	if _, err := os.Stat(rie); err != nil {
		if p, perr := exec.LookPath("aws-lambda-rie"); perr == nil {
			rie = p
		} else {
			t.Skipf("aws-local-e2e: SKIPPED: no aws-lambda-rie at %s or on PATH (make aws-local-e2e installs it)", rie)
		}
	}
	cdkOut := envOr("KEEL_AWSLOCAL_CDKOUT", filepath.Join(root, "infra", "cdk", "cdk.out"))
	tmpl, err := LoadTemplate(cdkOut)
	if err != nil {
		t.Skipf("aws-local-e2e: SKIPPED: no synthesized template (make synth writes it): %v", err)
	}
	dir := t.TempDir()
	if keep := os.Getenv("KEEL_AWSLOCAL_KEEP"); keep != "" {
		dir = keep
		_ = os.MkdirAll(dir, 0o755)
	}
	bootstrap := filepath.Join(dir, "bootstrap")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bootstrap, "./cmd/keel")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/keel: %v\n%s", err, out)
	}
	ctx := context.Background()
	m, err := StartMoto(ctx, python, dir)
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	_ = os.MkdirAll(home, 0o755)
	target := &MotoTarget{Moto: m, RIE: rie, Bootstrap: bootstrap, Root: root, Dir: dir, BaseEnv: MinimalEnv(home)}
	t.Cleanup(target.Close)
	return worldAt(target, tmpl, dir, m.URL, "test")
}

// worldAt is a World on a target whose every AWS API is at endpoint,
// signing with access key id accessKey.
func worldAt(target Target, tmpl *Template, dir, endpoint, accessKey string) *World {
	creds := credentials.NewStaticCredentialsProvider(accessKey, "test", "")
	cfg := aws.Config{Region: Region, Credentials: creds, BaseEndpoint: aws.String(endpoint)}
	return &World{Target: target, Template: tmpl, Dir: dir, AWS: cfg, SFNURL: endpoint,
		Lambda: &LambdaAPI{Endpoint: endpoint, Region: Region, Creds: creds}}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// destination is the research agent's publication service, in this
// process, listening where the functions' code can reach it (the
// target's Listen): every POST is counted, and onPost (when set) runs after the
// publication is recorded and before it is answered.
type destination struct {
	URL    string
	srv    *fixture.PublicationServer
	mu     sync.Mutex
	posts  int
	onPost func()
}

func newDestination(t *testing.T, w *World, dir string) *destination {
	t.Helper()
	srv, err := fixture.NewPublicationServer(fixture.ServerOptions{Log: filepath.Join(dir, "publications.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := w.Target.Listen()
	if err != nil {
		t.Fatal(err)
	}
	d := &destination{URL: "http://" + ln.Addr().String(), srv: srv}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		post := r.Method == http.MethodPost
		rec := &holdWriter{ResponseWriter: w, hold: post}
		srv.ServeHTTP(rec, r)
		if post {
			d.mu.Lock()
			d.posts++
			hook := d.onPost
			d.onPost = nil
			d.mu.Unlock()
			if hook != nil {
				hook() // the caller dies before it hears the answer
			}
			rec.flush()
		}
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return d
}

// holdWriter keeps a response until flush, so a hook can act between the
// effect being recorded and its answer leaving.
type holdWriter struct {
	http.ResponseWriter
	hold   bool
	status int
	body   []byte
}

func (h *holdWriter) WriteHeader(s int) {
	if !h.hold {
		h.ResponseWriter.WriteHeader(s)
		return
	}
	h.status = s
}

func (h *holdWriter) Write(b []byte) (int, error) {
	if !h.hold {
		return h.ResponseWriter.Write(b)
	}
	h.body = append(h.body, b...)
	return len(b), nil
}

func (h *holdWriter) flush() {
	if h.status == 0 {
		h.status = http.StatusOK
	}
	h.ResponseWriter.WriteHeader(h.status)
	_, _ = h.ResponseWriter.Write(h.body)
}

func (d *destination) counts() (posts int, pubs map[string]int) {
	d.mu.Lock()
	posts = d.posts
	d.mu.Unlock()
	pubs = map[string]int{}
	for _, p := range d.srv.Publications() {
		pubs[p.OperationID]++
	}
	return posts, pubs
}

// gateway builds an API Gateway HTTP API (payload 2.0) event with the IAM
// authorizer's caller, as API Gateway hands it to the api function.
func gateway(t *testing.T, principal, method, path, body, idemKey string) []byte {
	t.Helper()
	b, err := gatewayEvent(principal, method, path, body, idemKey)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gatewayEvent(principal, method, path, body, idemKey string) ([]byte, error) {
	raw, err := os.ReadFile("testdata/apigw-v2-post-runs-iam.json")
	if err != nil {
		return nil, err
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, err
	}
	if principal != "" {
		ev.RequestContext.Authorizer.IAM.UserARN = principal
	}
	p, q, _ := strings.Cut(path, "?")
	ev.RequestContext.HTTP.Method = method
	ev.RawPath, ev.RequestContext.HTTP.Path, ev.RawQueryString = p, p, q
	ev.Body, ev.IsBase64Encoded = body, false
	delete(ev.Headers, "content-length")
	delete(ev.Headers, "idempotency-key")
	if idemKey != "" {
		ev.Headers["idempotency-key"] = idemKey
	}
	return json.Marshal(ev)
}

// api invokes the stack's api function through Lambda Invoke and decodes
// its HTTP response into out (when non-nil).
func (s *Stack) api(t *testing.T, method, path, body, idemKey string, out any) int {
	t.Helper()
	inv, err := s.world.Lambda.Invoke(context.Background(), s.Functions["api"].Name, gateway(t, s.principal, method, path, body, idemKey))
	if err != nil {
		t.Fatal(err)
	}
	if inv.Status != http.StatusOK || inv.FunctionError != "" {
		t.Fatalf("api %s %s: Invoke %d %s: %s", method, path, inv.Status, inv.FunctionError, inv.Payload)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(inv.Payload, &resp); err != nil {
		t.Fatalf("api %s %s: %v: %s", method, path, err, inv.Payload)
	}
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal([]byte(resp.Body), out); err != nil {
			t.Fatalf("api %s %s: %v: %s", method, path, err, resp.Body)
		}
	}
	if resp.StatusCode/100 != 2 {
		t.Logf("api %s %s: %d %s", method, path, resp.StatusCode, resp.Body)
	}
	return resp.StatusCode
}

// store opens Keel's DynamoDB store on the stack's table (for records the
// API does not show).
func (s *Stack) store(t *testing.T) *dynamo.Store {
	t.Helper()
	st, err := dynamo.New(dynamodb.NewFromConfig(s.world.AWS), dynamo.Options{Table: s.Table})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// executionARN is the ARN of the execution named name.
func (s *Stack) executionARN(name string) string {
	return strings.Replace(s.StateMachineARN, ":stateMachine:", ":execution:", 1) + ":" + name
}

func (s *Stack) describe(t *testing.T, name string) (sfntypes.ExecutionStatus, error) {
	t.Helper()
	out, err := s.SFN.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(s.executionARN(name))})
	if err != nil {
		return "", err
	}
	return out.Status, nil
}

// history is an execution's whole history, oldest first.
func (s *Stack) history(t *testing.T, name string) []sfntypes.HistoryEvent {
	t.Helper()
	var evs []sfntypes.HistoryEvent
	p := sfn.NewGetExecutionHistoryPaginator(s.SFN, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(s.executionARN(name)), MaxResults: 1000})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("GetExecutionHistory %s: %v", name, err)
		}
		evs = append(evs, page.Events...)
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Id < evs[j].Id })
	return evs
}

// waitFor polls cond until it holds; the bound is a safety net against a
// hang, never an assertion about speed.
func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(150 * time.Second)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: gave up (last error: %v)", what, err)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// listExecutions names the executions of the stack's state machine.
func (s *Stack) listExecutions(t *testing.T) ([]string, error) {
	t.Helper()
	out, err := s.SFN.ListExecutions(context.Background(), &sfn.ListExecutionsInput{StateMachineArn: aws.String(s.StateMachineARN)})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range out.Executions {
		names = append(names, deref(e.Name))
	}
	return names, nil
}
