package awslocal

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// httpGateway plays API Gateway's HTTP API in front of the stack's api
// function for an HTTP client (the CLI): each request becomes the
// payload-2.0 event API Gateway would send, with the IAM authorizer's
// caller, and the function's answer becomes the HTTP response.
func (s *Stack) httpGateway(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ev, err := gatewayEvent(s.principal, r.Method, r.URL.RequestURI(), string(body), r.Header.Get("Idempotency-Key"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		inv, err := s.world.Lambda.Invoke(r.Context(), s.Functions["api"].Name, ev)
		var resp events.APIGatewayV2HTTPResponse
		if err == nil && inv.FunctionError == "" {
			err = json.Unmarshal(inv.Payload, &resp)
		}
		if err != nil || inv.FunctionError != "" {
			http.Error(w, "Internal Server Error", http.StatusInternalServerError) // as API Gateway answers a failed integration
			return
		}
		for k, v := range resp.Headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.WriteString(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// previewThroughAPI runs program's `upgrade-check --api` against the
// stack's API (through httpGateway): what that program would do with the
// runs in flight, before it is deployed.
func previewThroughAPI(t *testing.T, s *Stack, program string) string {
	t.Helper()
	m, ok := s.world.Target.(*MotoTarget)
	if !ok {
		t.Skipf("the preview runs the program's build on this host: %s builds none", s.world.Target.Name())
	}
	bin, err := m.bootstrap(context.Background(), program)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--url", s.httpGateway(t), "--token", "unused-behind-iam", "upgrade-check", "--api")
	cmd.Env = MinimalEnv(t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s upgrade-check --api: %v\n%s", program, err, out)
	}
	return string(out)
}

// previewLine is the preview's line for runID.
func previewLine(t *testing.T, out, runID string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, runID+" ") {
			return l
		}
	}
	t.Fatalf("the preview has no line for %s:\n%s", runID, out)
	return ""
}
