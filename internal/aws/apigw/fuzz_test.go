package apigw_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/keelrun/keel/internal/aws/apigw"
)

// FuzzGateway invokes the adapter the way Lambda does, with an arbitrary
// event payload (seeded with the real events in testdata). It must not
// panic; an event it accepts reaches the handler and comes back as the
// handler's response, base64 or not, with a valid status.
//
//	go test ./internal/aws/apigw -run '^$' -fuzz FuzzGateway -fuzztime 30s
func FuzzGateway(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"rawPath":"/prod/v1/runs","requestContext":{"stage":"prod","http":{"method":"POST"}},"isBase64Encoded":true,"body":"e30="}`))
	f.Add([]byte(`{"rawPath":"%zz","requestContext":{"http":{"method":"GET"}}}`))
	f.Add([]byte(`{"rawPath":"/x","rawQueryString":"a=%&b","requestContext":{"http":{"method":"G ET"},"domainName":"h/ost"}}`))
	f.Add([]byte(`{"requestContext":{"http":{}}}`))
	h := lambda.NewHandler(apigw.Gateway{Handler: http.HandlerFunc(echo)}.Handle)
	f.Fuzz(func(t *testing.T, payload []byte) {
		out, err := h.Invoke(context.Background(), payload)
		if err != nil {
			return // refused: not an event the adapter can serve
		}
		var r events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("response is not an API Gateway response: %v\n%s", err, out)
		}
		if r.StatusCode != http.StatusAccepted {
			t.Fatalf("status %d, want the handler's 202", r.StatusCode)
		}
	})
}
