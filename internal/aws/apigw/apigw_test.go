package apigw_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/aws/apigw"
)

// echo reports what the adapter made of the event, and answers with
// repeated headers and two cookies.
func echo(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p, _ := api.ContextPrincipal{}.Principal(r)
	w.Header().Add("Vary", "Accept")
	w.Header().Add("Vary", "Authorization")
	http.SetCookie(w, &http.Cookie{Name: "a", Value: "1"})
	http.SetCookie(w, &http.Cookie{Name: "b", Value: "2"})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"method": r.Method, "path": r.URL.Path, "query": r.URL.Query(), "cookie": r.Header.Get("Cookie"),
		"header1": r.Header.Get("Header1"), "principal": p, "body": string(body), "remote": r.RemoteAddr,
		"host": r.Host, "length": r.ContentLength,
	})
}

func TestGatewayAdapter(t *testing.T) {
	h := lambda.NewHandler(apigw.Gateway{Handler: http.HandlerFunc(echo)}.Handle)
	cases := []struct {
		name  string
		file  string // an event from aws-lambda-go's own testdata shapes, in ours
		edit  func(*events.APIGatewayV2HTTPRequest)
		check func(t *testing.T, got map[string]any, r events.APIGatewayV2HTTPResponse)
	}{
		{name: "JWT event: cookies, query and principal", file: "apigw-v2-get-runs-jwt.json",
			check: func(t *testing.T, got map[string]any, r events.APIGatewayV2HTTPResponse) {
				if got["cookie"] != "session=opaque-browser-cookie; theme=dark" || got["principal"] != jwtSub ||
					got["method"] != "GET" || got["path"] != "/v1/runs" || got["remote"] != "198.51.100.23" {
					t.Fatalf("%v", got)
				}
				q := got["query"].(map[string]any)
				if q["status"].([]any)[0] != "created" || q["limit"].([]any)[0] != "10" {
					t.Fatalf("query %v", q)
				}
			}},
		{name: "IAM event: body and principal", file: "apigw-v2-post-runs-iam.json",
			check: func(t *testing.T, got map[string]any, r events.APIGatewayV2HTTPResponse) {
				if got["principal"] != iamARN || !strings.Contains(got["body"].(string), `"agent":"research"`) ||
					got["length"].(float64) != float64(len(got["body"].(string))) {
					t.Fatalf("%v", got)
				}
			}},
		{name: "repeated query keys and an escaped path", file: "apigw-v2-get-runs-jwt.json",
			edit: func(ev *events.APIGatewayV2HTTPRequest) {
				ev.RawPath, ev.RawQueryString = "/v1/runs/a%20b", "x=1&x=2"
				ev.Headers["header1"] = "v1,v2"
			},
			check: func(t *testing.T, got map[string]any, r events.APIGatewayV2HTTPResponse) {
				if got["path"] != "/v1/runs/a b" || len(got["query"].(map[string]any)["x"].([]any)) != 2 || got["header1"] != "v1,v2" {
					t.Fatalf("%v", got)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := h.Invoke(context.Background(), gatewayEvent(t, tc.file, tc.edit))
			if err != nil {
				t.Fatal(err)
			}
			var r events.APIGatewayV2HTTPResponse
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatal(err)
			}
			// Payload 2.0 has no multi-value headers: repeated values are
			// joined, and Set-Cookie goes to cookies.
			if r.StatusCode != http.StatusAccepted || r.Headers["Vary"] != "Accept, Authorization" ||
				strings.Join(r.Cookies, ";") != "a=1;b=2" || r.IsBase64Encoded || r.Headers["Set-Cookie"] != "" {
				t.Fatalf("response %+v", r)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(r.Body), &got); err != nil {
				t.Fatal(err)
			}
			tc.check(t, got, r)
		})
	}
}

func TestGatewayRefusesOversizedResponses(t *testing.T) {
	big := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(make([]byte, apigw.MaxResponseBytes+1))
	})
	r, err := apigw.Gateway{Handler: big}.Handle(context.Background(), events.APIGatewayV2HTTPRequest{
		RawPath: "/", RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET"}}})
	if err != nil || r.StatusCode != http.StatusBadGateway || !strings.Contains(r.Body, "response_too_large") {
		t.Fatalf("%+v %v", r, err)
	}
}

const (
	jwtSub = "user-7f3a"
	iamARN = "arn:aws:sts::123456789012:assumed-role/KeelOperators/alice"
)

// gatewayEvent reads an API Gateway event from testdata and lets edit
// change it before it is encoded again.
func gatewayEvent(t *testing.T, name string, edit func(*events.APIGatewayV2HTTPRequest)) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if edit == nil {
		return b
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	edit(&ev)
	out, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
