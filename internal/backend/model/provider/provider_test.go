package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/keelrun/keel/internal/backend/model/provider"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/model/modeltest"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseSpec(t *testing.T) {
	tests := []struct {
		in      string
		want    provider.Spec
		wantErr bool
	}{
		{in: "anthropic:claude-sonnet-4-5", want: provider.Spec{Provider: "anthropic", Model: "claude-sonnet-4-5"}},
		{in: "bedrock:anthropic.claude-3-haiku-20240307-v1:0", want: provider.Spec{Provider: "bedrock", Model: "anthropic.claude-3-haiku-20240307-v1:0"}},
		{in: "scripted:testdata/run.json", want: provider.Spec{Provider: "scripted", Model: "testdata/run.json"}},
		{in: "anthropic", wantErr: true},
		{in: ":m", wantErr: true},
		{in: "openai:", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := provider.ParseSpec(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ParseSpec(%q) = %+v, %v", tc.in, got, err)
			}
		})
	}
}

// secretsServer speaks the Secrets Manager JSON protocol (awsJson1.1) for
// GetSecretValue, so the real SDK client is what reads the secret.
func secretsServer(t *testing.T, secrets map[string]string) provider.SecretGetter {
	t.Helper()
	return smGetter{secretsClient(t, secrets)}
}

// secretsClient is the real SDK client pointed at that server.
func secretsClient(t *testing.T, secrets map[string]string) *secretsmanager.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("X-Amz-Target"); got != "secretsmanager.GetSecretValue" {
			t.Errorf("X-Amz-Target = %q", got)
		}
		var in struct{ SecretId string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			t.Errorf("body: %v", err)
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.Header().Set("x-amzn-RequestId", "sm-req-1")
		v, ok := secrets[in.SecretId]
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"__type": "ResourceNotFoundException", "message": "Secrets Manager can't find the specified secret."})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"ARN": in.SecretId, "Name": "keel/model-key", "SecretString": v,
			"VersionId": "a1b2c3d4-5678-90ab-cdef-EXAMPLE11111", "VersionStages": []string{"AWSCURRENT"}, "CreatedDate": 1.7356896e9,
		})
	}))
	t.Cleanup(srv.Close)
	return secretsmanager.NewFromConfig(awsConfig(srv.URL))
}

// smGetter reads through the real SDK client (provider.SecretsManager is
// the same adapter, but exists only in builds that call models).
type smGetter struct{ c *secretsmanager.Client }

func (s smGetter) SecretString(ctx context.Context, id string) (string, error) {
	out, err := s.c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.SecretString), nil
}

func awsConfig(url string) aws.Config {
	return aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDKEELTEST", "aws-secret-key-0123456789", ""),
		BaseEndpoint: aws.String(url),
	}
}

var sseWire = func(dir, requestID string) modeltest.Wire {
	return modeltest.Wire{ContentType: "text/event-stream", RequestIDHeader: requestID, Frames: modeltest.SSEFrames(dir)}
}

// TestNewProviders drives each built-in provider from its variables, the
// way a process starts: ParseSettings of the environment, then New of the
// spec the caller read from KEEL_MODEL.
func TestNewProviders(t *testing.T) {
	const arnA = "arn:aws:secretsmanager:us-east-1:123456789012:secret:keel/anthropic-AbCdEf"
	const arnO = "arn:aws:secretsmanager:us-east-1:123456789012:secret:keel/openai-AbCdEf"
	const keyA = "sk-ant-api03-SECRETVALUE-from-secrets-manager"
	const keyO = "sk-proj-SECRETVALUE-plain-string-secret"
	sm := secretsServer(t, map[string]string{
		arnA: `{"api_key":"` + keyA + `"}`,
		arnO: keyO,
	})

	tests := []struct {
		name     string
		spec     string
		wire     modeltest.Wire
		env      map[string]string
		baseVar  string
		key      string
		wantCost int64
	}{
		{
			name: "anthropic, key from the environment", spec: "anthropic:claude-sonnet-4-5", wire: sseWire("../anthropic/testdata", "request-id"),
			env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant-env-key-0123456789"}, baseVar: "ANTHROPIC_BASE_URL",
			key: "sk-ant-env-key-0123456789",
			// 25·$3 + 6·$15 + 10·$0.30 per million = 168 micro-USD.
			wantCost: 168,
		},
		{
			name: "anthropic, key from a JSON secret", spec: "anthropic:claude-sonnet-4-5", wire: sseWire("../anthropic/testdata", "request-id"),
			env: map[string]string{"KEEL_ANTHROPIC_SECRET_ARN": arnA, "ANTHROPIC_API_KEY": "ignored-when-an-arn-is-set"}, baseVar: "ANTHROPIC_BASE_URL",
			key: keyA, wantCost: 168,
		},
		{
			name: "anthropic, key from the stack's KEEL_MODEL_SECRET_ARN", spec: "anthropic:claude-sonnet-4-5", wire: sseWire("../anthropic/testdata", "request-id"),
			env: map[string]string{"KEEL_MODEL_SECRET_ARN": arnA}, baseVar: "ANTHROPIC_BASE_URL",
			key: keyA, wantCost: 168,
		},
		{
			name: "openai, key from a plain secret, prices from KEEL_MODEL_PRICES", spec: "openai:gpt-4.1", wire: sseWire("../openai/testdata", "x-request-id"),
			env: map[string]string{"KEEL_OPENAI_SECRET_ARN": arnO, "KEEL_MODEL_PRICES": `{"gpt-4.1":{"input":1000000,"output":1000000,"cache_read":1000000}}`}, baseVar: "OPENAI_BASE_URL",
			key: keyO, wantCost: 41, // 41 tokens at $1 per million: 1 micro-USD each
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := modeltest.NewServer(t, tc.wire,
				modeltest.Reply{Fixture: "text"},
				modeltest.Reply{Status: 401, Body: `{"error":{"type":"authentication_error","message":"invalid key ` + tc.key + `"}}`})
			e := map[string]string{tc.baseVar: srv.URL}
			for k, v := range tc.env {
				e[k] = v
			}
			s, err := provider.ParseSettings(env(e))
			if err != nil {
				t.Fatal(err)
			}
			m, err := provider.New(context.Background(), tc.spec, s, provider.Deps{Secrets: sm})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := m.Generate(context.Background(), modeltest.Request1())
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != "Hello from Keel." || resp.CostMicroUSD != tc.wantCost {
				t.Fatalf("response = %+v, want the text fixture costing %d", resp, tc.wantCost)
			}
			sent := srv.Requests()[0].Header
			if !strings.Contains(sent.Get("Authorization")+sent.Get("X-Api-Key"), tc.key) {
				t.Fatalf("request did not carry the key from %v", tc.env)
			}
			_, err = m.Generate(context.Background(), modeltest.Request1())
			var se *model.StatusError
			if !errors.As(err, &se) || se.Status != 401 {
				t.Fatalf("err = %v, want a 401", err)
			}
			if strings.Contains(err.Error(), tc.key) {
				t.Fatalf("error leaks the key: %v", err)
			}
		})
	}
}

func TestNewBedrock(t *testing.T) {
	wire := modeltest.Wire{
		ContentType:     "application/vnd.amazon.eventstream",
		RequestIDHeader: "x-amzn-RequestId",
		Frames:          func(string) ([][]byte, error) { return nil, nil },
	}
	// An answer with no events: the call must fail as a cut, which proves
	// the spec reached the Bedrock provider over its wire. MaxAttempts 1:
	// a retry would find no scripted reply and fail the test.
	srv := modeltest.NewServer(t, wire, modeltest.Reply{Fixture: "empty"})
	cfg := awsConfig(srv.URL)
	m, err := provider.New(context.Background(), "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0",
		provider.Settings{MaxAttempts: 1}, provider.Deps{AWS: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(context.Background(), modeltest.Request1())
	if !errors.Is(err, model.ErrIncomplete) {
		t.Fatalf("err = %v, want ErrIncomplete", err)
	}
	if p := srv.Requests()[0].Path; p != "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/converse-stream" {
		t.Fatalf("path = %s", p)
	}
}

type fixedModel struct{ arg string }

func (f fixedModel) Generate(context.Context, model.Request) (model.Response, error) {
	return model.Response{Text: f.arg, StopReason: model.StopEndTurn}, nil
}

func TestFactoryAndErrors(t *testing.T) {
	deps := provider.Deps{
		Factories: map[string]provider.Factory{
			"scripted": func(_ context.Context, arg string) (model.Model, error) { return fixedModel{arg}, nil },
		},
	}
	m, err := provider.New(context.Background(), "scripted:testdata/run.json", provider.Settings{}, deps)
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := m.Generate(context.Background(), model.Request{}); resp.Text != "testdata/run.json" {
		t.Fatalf("factory got %q", resp.Text)
	}
	m, err = provider.New(context.Background(), "scripted", provider.Settings{}, deps)
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := m.Generate(context.Background(), model.Request{}); resp.Text != "" {
		t.Fatalf("bare factory name got %q", resp.Text)
	}

	const key = "sk-0123456789"
	tests := []struct {
		name string
		spec string
		s    provider.Settings
		want string
	}{
		{"empty spec", "", provider.Settings{}, "want provider:model"},
		{"unknown provider", "gemini:pro", provider.Settings{OpenAIAPIKey: key}, `unknown provider "gemini" (want one of: anthropic, bedrock, openai, scripted)`},
		{"no key", "anthropic:claude-sonnet-4-5", provider.Settings{OpenAIAPIKey: key}, "set ANTHROPIC_API_KEY or KEEL_ANTHROPIC_SECRET_ARN"},
		{"no openai key", "openai:gpt-4.1", provider.Settings{AnthropicAPIKey: key}, "set OPENAI_API_KEY or KEEL_OPENAI_SECRET_ARN"},
		{"arn without client", "openai:gpt-4.1", provider.Settings{OpenAISecretARN: "arn:x", OpenAIAPIKey: key}, "no Secrets Manager client"},
		{"bedrock without aws", "bedrock:m", provider.Settings{}, "no AWS configuration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := provider.New(context.Background(), tc.spec, tc.s, deps)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), key) {
				t.Fatalf("error leaks the key: %v", err)
			}
		})
	}
}

func TestSecretErrors(t *testing.T) {
	sm := secretsServer(t, map[string]string{"arn:empty": `{"other":"x"}`})
	tests := []struct{ arn, want string }{
		{"arn:missing", "ResourceNotFoundException"},
		{"arn:empty", "holds no API key"},
	}
	for _, tc := range tests {
		t.Run(tc.arn, func(t *testing.T) {
			_, err := provider.New(context.Background(), "anthropic:claude-sonnet-4-5",
				provider.Settings{AnthropicSecretARN: tc.arn, AnthropicAPIKey: "sk-ant-not-used-0123456789"},
				provider.Deps{Secrets: sm})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.arn) {
				t.Fatalf("err = %v, want one naming %s and %q", err, tc.arn, tc.want)
			}
			if strings.Contains(err.Error(), "sk-ant-not-used") {
				t.Fatalf("error leaks the key: %v", err)
			}
		})
	}
}

// The limiter from KEEL_MODEL_TPM is a real bound: a call larger than a
// minute's tokens must wait, and a wait past MaxInlineWait is a durable one.
func TestTPM(t *testing.T) {
	s, err := provider.ParseSettings(env(map[string]string{
		"OPENAI_API_KEY": "sk-0123456789", "KEEL_MODEL_TPM": "600", "KEEL_MODEL_MAX_INLINE_WAIT": "1s",
	}))
	if err != nil {
		t.Fatal(err)
	}
	m, err := provider.New(context.Background(), "openai:gpt-4.1", s, provider.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	// 4096 output tokens reserved by default against 600 a minute.
	_, err = m.Generate(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Text: "hi"}}})
	var rl *model.RateLimitedError
	if !errors.As(err, &rl) || !rl.Limiter || rl.RetryAfter < 5*time.Minute {
		t.Fatalf("err = %v, want a limiter wait of several minutes", err)
	}
}

// A limiter the process gives in Deps is the one used: the Model makes
// none of its own from TokensPerMinute.
func TestDepsLimiterWins(t *testing.T) {
	lim := model.NewTokenLimiter(1_000_000, time.Now)
	m, err := provider.New(context.Background(), "openai:gpt-4.1",
		provider.Settings{OpenAIAPIKey: "sk-0123456789", OpenAIBaseURL: "http://127.0.0.1:1", TokensPerMinute: 600, MaxInlineWait: time.Second, MaxAttempts: 1},
		provider.Deps{Limiter: lim})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Text: "hi"}}})
	var rl *model.RateLimitedError
	if errors.As(err, &rl) && rl.Limiter {
		t.Fatalf("err = %v: the 600 TPM limiter was made although Deps gave one", err)
	}
}
