package awsbackend

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sfn"
)

func TestEnvConfig(t *testing.T) {
	base := map[string]string{"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "s3cr3t-canary", "AWS_SESSION_TOKEN": "tok"}
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
		region  string
		wantErr string
	}{
		{name: "lambda's variables", env: with("AWS_REGION", "eu-west-1"), region: "eu-west-1"},
		{name: "default region variable", env: with("AWS_DEFAULT_REGION", "ap-south-1"), region: "ap-south-1"},
		{name: "no region: us-east-1", env: with(), region: "us-east-1"},
		{name: "no credentials", env: map[string]string{}, wantErr: "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set"},
		{name: "no secret", env: map[string]string{"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE"}, wantErr: "AWS_SECRET_ACCESS_KEY"},
		{name: "no key id", env: map[string]string{"AWS_SECRET_ACCESS_KEY": "s3cr3t-canary"}, wantErr: "AWS_ACCESS_KEY_ID is not"},
		{name: "bad max attempts", env: with("AWS_MAX_ATTEMPTS", "zero"), wantErr: "AWS_MAX_ATTEMPTS"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := EnvConfig(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "s3cr3t-canary") {
					t.Fatal("the error carries the secret")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Region != tc.region {
				t.Errorf("region %q, want %q", cfg.Region, tc.region)
			}
			creds, err := cfg.Credentials.Retrieve(context.Background())
			if err != nil || creds.AccessKeyID != "AKIDEXAMPLE" || creds.SecretAccessKey != "s3cr3t-canary" || creds.SessionToken != "tok" {
				t.Errorf("credentials %+v, %v", creds, err)
			}
		})
	}
}

// TestEnvConfigEndpoints sends a real request through a client built on
// EnvConfig: AWS_ENDPOINT_URL_SFN wins over AWS_ENDPOINT_URL for Step
// Functions, and the request is signed with the environment's key.
func TestEnvConfigEndpoints(t *testing.T) {
	hit := make(chan string, 2)
	srv := func(name string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hit <- name + " " + r.Header.Get("Authorization")
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			_, _ = w.Write([]byte(`{"executionArn":"arn:aws:states:us-east-1:1:execution:m:n","startDate":0}`))
		}))
		t.Cleanup(s.Close)
		return s
	}
	general, specific := srv("general"), srv("sfn")
	env := map[string]string{"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "x", "AWS_REGION": "us-east-1",
		"AWS_ENDPOINT_URL": general.URL, "AWS_ENDPOINT_URL_SFN": specific.URL}
	// The SDK's own check reads the process environment for these two
	// names before it asks the configuration sources.
	t.Setenv("AWS_ENDPOINT_URL", general.URL)
	t.Setenv("AWS_ENDPOINT_URL_SFN", specific.URL)
	cfg, err := EnvConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sfn.NewFromConfig(cfg).StartExecution(t.Context(), &sfn.StartExecutionInput{StateMachineArn: new(string)}); err != nil {
		t.Fatal(err)
	}
	got := <-hit
	if !strings.HasPrefix(got, "sfn AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") {
		t.Errorf("request went to %q, want the sfn endpoint signed with the environment's key", got)
	}
}
