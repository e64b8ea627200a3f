package provider_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/backend/model/provider"
	"github.com/keelrun/keel/internal/kernel/model"
)

const (
	testKeyA = "sk-ant-api03-SETTINGS-SECRET"
	testKeyO = "sk-proj-SETTINGS-SECRET"
)

func TestParseSettings(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    provider.Settings
		wantErr string // a substring of the error; "" for none
	}{
		{name: "empty", env: nil, want: provider.Settings{}},
		{name: "KEEL_MODEL is not read", env: map[string]string{"KEEL_MODEL": "anthropic:claude-sonnet-4-5"}, want: provider.Settings{}},
		{
			name: "every variable",
			env: map[string]string{
				"KEEL_MODEL_MAX_TOKENS":      "8192",
				"KEEL_MODEL_MAX_ATTEMPTS":    "2",
				"KEEL_MODEL_IDLE_TIMEOUT":    "90s",
				"KEEL_MODEL_MAX_INLINE_WAIT": "1m30s",
				"KEEL_MODEL_TPM":             "400000",
				"KEEL_MODEL_PRICES":          `{"gpt-4.1":{"input":1000000,"output":2000000,"cache_read":3000000}}`,
				"ANTHROPIC_API_KEY":          testKeyA,
				"ANTHROPIC_BASE_URL":         "http://localhost:9001",
				"KEEL_ANTHROPIC_SECRET_ARN":  "arn:anthropic",
				"OPENAI_API_KEY":             testKeyO,
				"OPENAI_BASE_URL":            "http://localhost:9002/v1/",
				"KEEL_OPENAI_SECRET_ARN":     "arn:openai",
				"KEEL_MODEL_SECRET_ARN":      "arn:stack",
			},
			want: provider.Settings{
				MaxTokens: 8192, MaxAttempts: 2, IdleTimeout: 90 * time.Second, MaxInlineWait: 90 * time.Second,
				TokensPerMinute: 400000,
				Prices:          model.PriceTable{"gpt-4.1": {Input: 1_000_000, Output: 2_000_000, CacheRead: 3_000_000}},
				AnthropicAPIKey: testKeyA, AnthropicBaseURL: "http://localhost:9001", AnthropicSecretARN: "arn:anthropic",
				OpenAIAPIKey: testKeyO, OpenAIBaseURL: "http://localhost:9002/v1/", OpenAISecretARN: "arn:openai",
			},
		},
		{
			name: "zeros are unset",
			env: map[string]string{
				"KEEL_MODEL_MAX_TOKENS": "0", "KEEL_MODEL_MAX_ATTEMPTS": "0", "KEEL_MODEL_IDLE_TIMEOUT": "0s",
				"KEEL_MODEL_MAX_INLINE_WAIT": "0", "KEEL_MODEL_TPM": "0",
			},
			want: provider.Settings{},
		},
		{
			name: "KEEL_MODEL_SECRET_ARN stands for both provider ARNs",
			env:  map[string]string{"KEEL_MODEL_SECRET_ARN": "arn:stack"},
			want: provider.Settings{AnthropicSecretARN: "arn:stack", OpenAISecretARN: "arn:stack"},
		},
		{
			name: "a provider ARN wins over KEEL_MODEL_SECRET_ARN",
			env:  map[string]string{"KEEL_MODEL_SECRET_ARN": "arn:stack", "KEEL_OPENAI_SECRET_ARN": "arn:openai"},
			want: provider.Settings{AnthropicSecretARN: "arn:stack", OpenAISecretARN: "arn:openai"},
		},

		{name: "KEEL_MODEL_MAX_TOKENS not a number", env: map[string]string{"KEEL_MODEL_MAX_TOKENS": "lots"}, wantErr: `KEEL_MODEL_MAX_TOKENS="lots": want a non-negative integer`},
		{name: "KEEL_MODEL_MAX_TOKENS negative", env: map[string]string{"KEEL_MODEL_MAX_TOKENS": "-1"}, wantErr: `KEEL_MODEL_MAX_TOKENS="-1": want a non-negative integer`},
		{name: "KEEL_MODEL_MAX_ATTEMPTS not a number", env: map[string]string{"KEEL_MODEL_MAX_ATTEMPTS": "3.5"}, wantErr: `KEEL_MODEL_MAX_ATTEMPTS="3.5": want a non-negative integer`},
		{name: "KEEL_MODEL_MAX_ATTEMPTS negative", env: map[string]string{"KEEL_MODEL_MAX_ATTEMPTS": "-1"}, wantErr: `KEEL_MODEL_MAX_ATTEMPTS="-1": want a non-negative integer`},
		{name: "KEEL_MODEL_IDLE_TIMEOUT no unit", env: map[string]string{"KEEL_MODEL_IDLE_TIMEOUT": "90"}, wantErr: `KEEL_MODEL_IDLE_TIMEOUT="90": want a non-negative duration`},
		{name: "KEEL_MODEL_IDLE_TIMEOUT word", env: map[string]string{"KEEL_MODEL_IDLE_TIMEOUT": "soon"}, wantErr: `KEEL_MODEL_IDLE_TIMEOUT="soon": want a non-negative duration`},
		{name: "KEEL_MODEL_IDLE_TIMEOUT negative", env: map[string]string{"KEEL_MODEL_IDLE_TIMEOUT": "-5s"}, wantErr: `KEEL_MODEL_IDLE_TIMEOUT="-5s": want a non-negative duration`},
		{name: "KEEL_MODEL_MAX_INLINE_WAIT word", env: map[string]string{"KEEL_MODEL_MAX_INLINE_WAIT": "forever"}, wantErr: `KEEL_MODEL_MAX_INLINE_WAIT="forever": want a non-negative duration`},
		{name: "KEEL_MODEL_MAX_INLINE_WAIT negative", env: map[string]string{"KEEL_MODEL_MAX_INLINE_WAIT": "-1m"}, wantErr: `KEEL_MODEL_MAX_INLINE_WAIT="-1m": want a non-negative duration`},
		{name: "KEEL_MODEL_TPM not a number", env: map[string]string{"KEEL_MODEL_TPM": "x"}, wantErr: `KEEL_MODEL_TPM="x": want a non-negative integer`},
		{name: "KEEL_MODEL_TPM negative", env: map[string]string{"KEEL_MODEL_TPM": "-600"}, wantErr: `KEEL_MODEL_TPM="-600": want a non-negative integer`},
		{name: "KEEL_MODEL_PRICES not JSON", env: map[string]string{"KEEL_MODEL_PRICES": "{"}, wantErr: "KEEL_MODEL_PRICES: price table"},
		{name: "KEEL_MODEL_PRICES wrong shape", env: map[string]string{"KEEL_MODEL_PRICES": `{"gpt-4.1":"cheap"}`}, wantErr: "KEEL_MODEL_PRICES: price table"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := map[string]string{}
			for k, v := range tc.env {
				e[k] = v
			}
			if tc.wantErr != "" {
				// Keys beside a bad value: the error must not carry them.
				e["ANTHROPIC_API_KEY"], e["OPENAI_API_KEY"] = testKeyA, testKeyO
			}
			got, err := provider.ParseSettings(env(e))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), testKeyA) || strings.Contains(err.Error(), testKeyO) {
					t.Fatalf("error leaks a key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseSettings =\n %#v\nwant\n %#v", got, tc.want)
			}
		})
	}
}

// Settings hold keys, so every way of printing or logging one redacts them.
func TestSettingsRedactKeys(t *testing.T) {
	s := provider.Settings{
		AnthropicAPIKey: testKeyA, OpenAIAPIKey: testKeyO,
		AnthropicSecretARN: "arn:anthropic", OpenAIBaseURL: "http://localhost:9002", MaxAttempts: 2,
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("model settings", "settings", s)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("model settings", "settings", s)
	outputs := map[string]string{
		"%v":   fmt.Sprintf("%v", s),
		"%+v":  fmt.Sprintf("%+v", s),
		"%#v":  fmt.Sprintf("%#v", s),
		"%s":   s.String(), // what %s prints
		"&%+v": fmt.Sprintf("%+v", &s),
		"slog": buf.String(),
	}
	for how, out := range outputs {
		if strings.Contains(out, testKeyA) || strings.Contains(out, testKeyO) {
			t.Errorf("%s leaks a key: %s", how, out)
		}
		if !strings.Contains(out, "[redacted]") || !strings.Contains(out, "arn:anthropic") || !strings.Contains(out, "localhost:9002") {
			t.Errorf("%s = %s, want the keys redacted and the rest shown", how, out)
		}
	}
	if s.AnthropicAPIKey != testKeyA {
		t.Fatal("printing changed the Settings")
	}
	if out := fmt.Sprint(provider.Settings{}); strings.Contains(out, "[redacted]") {
		t.Errorf("unset keys print as redacted: %s", out)
	}
}
