package entry_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/entry"
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
	h := lambda.NewHandler(entry.Gateway{Handler: http.HandlerFunc(echo)}.Handle)
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
		_, _ = w.Write(make([]byte, entry.MaxResponseBytes+1))
	})
	r, err := entry.Gateway{Handler: big}.Handle(context.Background(), events.APIGatewayV2HTTPRequest{
		RawPath: "/", RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET"}}})
	if err != nil || r.StatusCode != http.StatusBadGateway || !strings.Contains(r.Body, "response_too_large") {
		t.Fatalf("%+v %v", r, err)
	}
}

func TestFromEnv(t *testing.T) {
	base := map[string]string{"KEEL_TABLE": "tbl", "KEEL_BUCKET": "bkt"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		name    string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, e entry.Env)
	}{
		{name: "defaults", env: base, check: func(t *testing.T, e entry.Env) {
			if e.Setup.Store != "dynamo:tbl" || e.Setup.Artifacts != "s3:bkt" || e.StepMargin != 30*time.Second ||
				e.StreamMax != 5*time.Second || e.ScheduleOwner != "scheduler" || e.S3PathStyle ||
				!strings.HasPrefix(e.Setup.Owner, "lambda/step/") || !strings.HasPrefix(e.Setup.Publish, "dir:") {
				t.Fatalf("%+v", e)
			}
		}},
		{name: "explicit values", env: with("KEEL_STORE", "dynamo:other", "KEEL_OWNER", "me", "KEEL_STEP_MARGIN", "45s",
			"AWS_ENDPOINT_URL", "http://localhost:4566", "KEEL_RUN_ID", "run_1", "KEEL_TASK_TOKEN", "tok", "KEEL_STATE_MACHINE_ARN", "arn:sm",
			"KEEL_MODEL_SECRET_ARN", "arn:secret:model", "KEEL_OPENAI_SECRET_ARN", "arn:secret:openai"),
			check: func(t *testing.T, e entry.Env) {
				if e.Setup.Store != "dynamo:other" || e.Setup.Owner != "me" || e.StepMargin != 45*time.Second || !e.S3PathStyle ||
					e.RunID != "run_1" || e.TaskToken != "tok" || e.StateMachineARN != "arn:sm" {
					t.Fatalf("%+v", e)
				}
				// The stack's one model secret stands for the provider's,
				// unless that is set itself.
				if e.Getenv("KEEL_ANTHROPIC_SECRET_ARN") != "arn:secret:model" || e.Getenv("KEEL_OPENAI_SECRET_ARN") != "arn:secret:openai" {
					t.Fatal("model secret mapping")
				}
			}},
		{name: "no table", env: map[string]string{"KEEL_BUCKET": "b"}, wantErr: "KEEL_TABLE"},
		{name: "no bucket", env: map[string]string{"KEEL_TABLE": "t"}, wantErr: "KEEL_BUCKET"},
		{name: "a SQLite store cannot be shared by functions", env: with("KEEL_STORE", "sqlite:/tmp/x.db"), wantErr: "KEEL_TABLE"},
		{name: "bad margin", env: with("KEEL_STEP_MARGIN", "soon"), wantErr: "KEEL_STEP_MARGIN"},
		{name: "bad SSE duration", env: with("KEEL_SSE_MAX_DURATION", "-1s"), wantErr: "KEEL_SSE_MAX_DURATION"},
		{name: "setup's own checks", env: with("KEEL_PUBLISH", "ftp://x"), wantErr: "KEEL_PUBLISH"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := entry.FromEnv(mapenv(tc.env), "lambda/step")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, e)
		})
	}
}

func TestAWSDepsBuildProviderModels(t *testing.T) {
	env, err := entry.FromEnv(mapenv(map[string]string{"KEEL_TABLE": "t", "KEEL_BUCKET": "b", "ANTHROPIC_API_KEY": "sk-test"}), "lambda/step")
	if err != nil {
		t.Fatal(err)
	}
	d, err := entry.AWSDeps(env, aws.Config{Region: "us-east-1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := d.Backends.NewModel(context.Background(), "anthropic:claude-sonnet-4-5"); err != nil || m == nil {
		t.Fatalf("anthropic: %v", err)
	}
	if _, err := d.Backends.NewModel(context.Background(), "openai:gpt-5"); err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Fatalf("openai without a key: %v", err)
	}
}
