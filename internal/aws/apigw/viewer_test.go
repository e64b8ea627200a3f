package apigw_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/keelrun/keel/internal/aws/apigw"
	"github.com/keelrun/keel/internal/observe/viewer"
)

// On AWS the viewer's page and assets come back through API Gateway as
// text (not base64), with their security headers.
func TestGatewayServesTheViewer(t *testing.T) {
	for _, tc := range []struct{ path, ctype, has string }{
		{"/", "text/html", "<!doctype html>"},
		{"/ui/app.js", "text/javascript", "sessionStorage"},
		{"/ui/app.css", "text/css", "@media"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			r, err := apigw.Gateway{Handler: viewer.Handler()}.Handle(context.Background(), events.APIGatewayV2HTTPRequest{
				RawPath: tc.path, RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET"}}})
			if err != nil || r.StatusCode != 200 || r.IsBase64Encoded || !strings.HasPrefix(r.Headers["Content-Type"], tc.ctype) ||
				!strings.Contains(r.Body, tc.has) || r.Headers["Content-Security-Policy"] == "" {
				t.Fatalf("%d base64=%v %v %v", r.StatusCode, r.IsBase64Encoded, r.Headers, err)
			}
		})
	}
}
