// Package apigw adapts an http.Handler — Keel's API — to API Gateway HTTP
// API events (payload format 2.0), for the api role. The handler runs
// in-process on a buffered response (API Gateway buffers Lambda
// responses), so an SSE request answers with the events of a bounded
// window and a retry hint, and the client resumes from Last-Event-ID. The
// principal is the authorizer's: the IAM caller's ARN or the JWT's "sub".
package apigw

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/keelrun/keel/internal/httpbuf"

	"github.com/keelrun/keel/internal/api"
)

// MaxResponseBytes is the largest body the gateway adapter returns: Lambda
// refuses a synchronous response over 6 MB, and a binary body grows by a
// third in base64. A larger answer becomes a 502 the client can read,
// instead of a Lambda failure it cannot.
const MaxResponseBytes = 4 << 20

// Gateway adapts an http.Handler to API Gateway HTTP API events (payload
// format 2.0). The handler runs in-process on a buffered response.
type Gateway struct{ Handler http.Handler }

// Principal is who the API Gateway authorizer says made the request: the
// IAM caller's ARN, or the "sub" claim of a JWT. Empty when there is no
// authorizer (the API then answers 401).
func Principal(req events.APIGatewayV2HTTPRequest) string {
	a := req.RequestContext.Authorizer
	switch {
	case a == nil:
		return ""
	case a.IAM != nil && a.IAM.UserARN != "":
		return a.IAM.UserARN
	case a.JWT != nil:
		return a.JWT.Claims["sub"]
	}
	return ""
}

// Handle serves one API Gateway request. An error is returned only for an
// event that cannot be a request (a malformed body encoding or path); API
// Gateway turns it into a 500.
func (g Gateway) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	r, err := toRequest(ctx, req)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	w := httpbuf.New()
	g.Handler.ServeHTTP(w, r)
	return response(w), nil
}

func toRequest(ctx context.Context, req events.APIGatewayV2HTTPRequest) (*http.Request, error) {
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			return nil, fmt.Errorf("apigateway: body is not base64: %w", err)
		}
		body = b
	}
	path := req.RawPath
	if path == "" {
		path = req.RequestContext.HTTP.Path
	}
	// On a named stage the path starts with the stage; the API's routes
	// do not.
	if st := req.RequestContext.Stage; st != "" && st != "$default" {
		if p, ok := strings.CutPrefix(path, "/"+st); ok && (p == "" || p[0] == '/') {
			path = p
		}
	}
	host := req.RequestContext.DomainName
	if host == "" {
		host = "apigateway.local"
	}
	u, err := url.Parse("https://" + host + path)
	if err != nil {
		return nil, fmt.Errorf("apigateway: path %q: %w", path, err)
	}
	u.RawQuery = req.RawQueryString
	method := req.RequestContext.HTTP.Method
	if method == "" {
		return nil, fmt.Errorf("apigateway: event has no requestContext.http.method")
	}
	ctx = api.WithPrincipal(ctx, Principal(req))
	r, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("apigateway: %w", err)
	}
	// Payload 2.0 joins repeated headers with commas into one value, which
	// is how HTTP reads them too; cookies come apart.
	for k, v := range req.Headers {
		r.Header.Set(k, v)
	}
	if len(req.Cookies) > 0 {
		r.Header.Set("Cookie", strings.Join(req.Cookies, "; "))
	}
	r.ContentLength = int64(len(body))
	r.Host = host
	r.RemoteAddr = req.RequestContext.HTTP.SourceIP
	r.RequestURI = u.RequestURI()
	return r, nil
}

// response turns what the handler wrote into API Gateway's answer. The
// handler writes to an httpbuf.Response, whose Flush does nothing: API
// Gateway sends the response only when the invocation returns.
func response(b *httpbuf.Response) events.APIGatewayV2HTTPResponse {
	status := b.Status
	if status == 0 {
		status = http.StatusOK
	}
	if b.Body.Len() > MaxResponseBytes {
		msg := fmt.Sprintf(`{"error":{"code":"response_too_large","message":"the response exceeds the %d-byte limit of the Lambda API"}}`, MaxResponseBytes)
		return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusBadGateway,
			Headers: map[string]string{"Content-Type": "application/json"}, Body: msg}
	}
	out := events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: map[string]string{}}
	for k, vs := range b.Header() {
		if k == "Set-Cookie" {
			out.Cookies = append(out.Cookies, vs...)
			continue
		}
		out.Headers[k] = strings.Join(vs, ", ")
	}
	body := b.Body.Bytes()
	if textual(b.Header().Get("Content-Type")) && utf8.Valid(body) {
		out.Body = string(body)
	} else if len(body) > 0 {
		out.Body = base64.StdEncoding.EncodeToString(body)
		out.IsBase64Encoded = true
	}
	return out
}

// textual reports whether a content type is text API Gateway may pass as
// a string; everything else (artifact downloads) goes base64.
func textual(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return ct == ""
	}
	return strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json")
}
