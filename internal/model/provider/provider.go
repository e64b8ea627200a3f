package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/keelrun/keel/internal/model"
	"github.com/keelrun/keel/internal/model/anthropic"
	"github.com/keelrun/keel/internal/model/bedrock"
	"github.com/keelrun/keel/internal/model/openai"
)

// SecretGetter is the one Secrets Manager call the chooser makes; a
// *secretsmanager.Client satisfies it.
type SecretGetter interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

var _ SecretGetter = (*secretsmanager.Client)(nil)

// Factory builds a Model for a provider that is not built in, from the
// part of the spec after the colon. The harness registers "scripted" this
// way, so that this package does not depend on it.
type Factory func(ctx context.Context, arg string) (model.Model, error)

// Deps are what New and FromEnv need from the process. Only Getenv is
// required; each other field is needed only by the providers that use it.
type Deps struct {
	// Getenv reads configuration (os.Getenv in production).
	Getenv func(string) string
	// HTTPClient is given to the Anthropic and OpenAI SDKs; nil: theirs.
	HTTPClient *http.Client
	// AWS is the loaded AWS configuration, required for bedrock.
	AWS *aws.Config
	// Secrets reads API keys named by KEEL_*_SECRET_ARN.
	Secrets SecretGetter
	// Limiter is the process's token-rate limiter. When nil and
	// KEEL_MODEL_TPM is set, New makes one for the Model it returns:
	// share that Model, or pass one Limiter to every New.
	Limiter *model.TokenLimiter
	// RateLimits are the process's 429 counters; nil: the Model's own.
	RateLimits *model.RateLimitCounters
	// Factories add providers by name ("scripted").
	Factories map[string]Factory
	// Transport is the base of the transport options (tests inject Sleep
	// and Jitter here); the KEEL_MODEL_* settings override its fields.
	Transport model.TransportOptions
	Logger    *slog.Logger
}

// Spec is a parsed KEEL_MODEL: "anthropic:claude-sonnet-4-5".
type Spec struct {
	Provider string
	Model    string
}

func (s Spec) String() string { return s.Provider + ":" + s.Model }

// ParseSpec reads "provider:model". The model part may itself hold colons
// (Bedrock ids such as "anthropic.claude-3-haiku-20240307-v1:0").
func ParseSpec(s string) (Spec, error) {
	p, m, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || p == "" || m == "" {
		return Spec{}, fmt.Errorf("model spec %q: want provider:model, e.g. anthropic:claude-sonnet-4-5", s)
	}
	return Spec{Provider: p, Model: m}, nil
}

// FromEnv builds the Model that KEEL_MODEL names.
func FromEnv(ctx context.Context, deps Deps) (model.Model, error) {
	if deps.Getenv == nil {
		return nil, errors.New("provider: no Getenv")
	}
	spec := deps.Getenv("KEEL_MODEL")
	if spec == "" {
		return nil, errors.New("KEEL_MODEL is not set (anthropic:<model>, openai:<model>, bedrock:<model-id>, or a registered provider)")
	}
	return New(ctx, spec, deps)
}

// New builds the Model a spec names: a built-in provider wrapped in
// model.NewTransport, or what a registered Factory returns (as is).
func New(ctx context.Context, spec string, deps Deps) (model.Model, error) {
	if deps.Getenv == nil {
		return nil, errors.New("provider: no Getenv")
	}
	// A registered provider may be named alone ("scripted"): its factory
	// gets an empty argument.
	if f, ok := deps.Factories[strings.TrimSpace(spec)]; ok {
		return f(ctx, "")
	}
	sp, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	if f, ok := deps.Factories[sp.Provider]; ok {
		return f(ctx, sp.Model)
	}
	opts, err := transportOptions(sp, deps)
	if err != nil {
		return nil, err
	}
	maxTokens, err := intEnv(deps.Getenv, "KEEL_MODEL_MAX_TOKENS")
	if err != nil {
		return nil, err
	}
	var s model.Streamer
	switch sp.Provider {
	case anthropic.Name:
		key, err := apiKey(ctx, deps, "ANTHROPIC_API_KEY", "KEEL_ANTHROPIC_SECRET_ARN")
		if err != nil {
			return nil, err
		}
		s, err = anthropic.New(anthropic.Config{
			Model: sp.Model, APIKey: key, BaseURL: deps.Getenv("ANTHROPIC_BASE_URL"),
			HTTPClient: deps.HTTPClient, MaxTokens: maxTokens,
		})
		if err != nil {
			return nil, err
		}
	case openai.Name:
		key, err := apiKey(ctx, deps, "OPENAI_API_KEY", "KEEL_OPENAI_SECRET_ARN")
		if err != nil {
			return nil, err
		}
		s, err = openai.New(openai.Config{
			Model: sp.Model, APIKey: key, BaseURL: deps.Getenv("OPENAI_BASE_URL"),
			HTTPClient: deps.HTTPClient, MaxTokens: maxTokens,
		})
		if err != nil {
			return nil, err
		}
	case bedrock.Name:
		if deps.AWS == nil {
			return nil, errors.New("bedrock: no AWS configuration given")
		}
		s, err = bedrock.New(*deps.AWS, bedrock.Config{ModelID: sp.Model, MaxTokens: maxTokens})
		if err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("model spec %q: unknown provider %q", spec, sp.Provider)
	}
	return model.NewTransport(s, opts), nil
}

func transportOptions(sp Spec, deps Deps) (model.TransportOptions, error) {
	o := deps.Transport
	o.Provider = sp.Provider
	o.Model = sp.Model
	if o.Endpoint == "" {
		o.Endpoint = sp.String()
	}
	if deps.Limiter != nil {
		o.Limiter = deps.Limiter
	}
	if deps.RateLimits != nil {
		o.RateLimits = deps.RateLimits
	}
	if deps.Logger != nil {
		o.Logger = deps.Logger
	}
	var err error
	if o.MaxAttempts, err = intEnvOr(deps.Getenv, "KEEL_MODEL_MAX_ATTEMPTS", o.MaxAttempts); err != nil {
		return o, err
	}
	if o.IdleTimeout, err = durationEnvOr(deps.Getenv, "KEEL_MODEL_IDLE_TIMEOUT", o.IdleTimeout); err != nil {
		return o, err
	}
	if o.MaxInlineWait, err = durationEnvOr(deps.Getenv, "KEEL_MODEL_MAX_INLINE_WAIT", o.MaxInlineWait); err != nil {
		return o, err
	}
	tpm, err := intEnv(deps.Getenv, "KEEL_MODEL_TPM")
	if err != nil {
		return o, err
	}
	if o.Limiter == nil && tpm > 0 {
		o.Limiter = model.NewTokenLimiter(int64(tpm), time.Now)
	}
	if o.Prices == nil {
		o.Prices = DefaultPrices()
	}
	if v := deps.Getenv("KEEL_MODEL_PRICES"); v != "" {
		extra, err := model.ParsePriceTable([]byte(v))
		if err != nil {
			return o, fmt.Errorf("KEEL_MODEL_PRICES: %w", err)
		}
		prices := maps.Clone(o.Prices)
		maps.Copy(prices, extra)
		o.Prices = prices
	}
	return o, nil
}

// apiKey reads a key from the secret named by arnVar when it is set, else
// from envVar. Errors name the variable and the ARN, never the value.
func apiKey(ctx context.Context, deps Deps, envVar, arnVar string) (string, error) {
	if arn := deps.Getenv(arnVar); arn != "" {
		if deps.Secrets == nil {
			return "", fmt.Errorf("%s is set but no Secrets Manager client was given", arnVar)
		}
		out, err := deps.Secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
		if err != nil {
			return "", fmt.Errorf("%s: reading secret %s: %w", arnVar, arn, err)
		}
		key := secretKey(aws.ToString(out.SecretString), envVar)
		if key == "" {
			return "", fmt.Errorf("%s: secret %s holds no API key (a plain string, or JSON with \"api_key\" or %q)", arnVar, arn, envVar)
		}
		return key, nil
	}
	if key := deps.Getenv(envVar); key != "" {
		return key, nil
	}
	return "", fmt.Errorf("no API key: set %s or %s", envVar, arnVar)
}

// secretKey takes the key out of a secret: a JSON object's "api_key" (or
// envVar) field, or else the whole string.
func secretKey(s, envVar string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "{") {
		var m map[string]string
		if json.Unmarshal([]byte(s), &m) != nil {
			return ""
		}
		if k := m["api_key"]; k != "" {
			return k
		}
		return m[envVar]
	}
	return s
}

func intEnv(getenv func(string) string, name string) (int, error) {
	return intEnvOr(getenv, name, 0)
}

func intEnvOr(getenv func(string) string, name string, def int) (int, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: want a non-negative integer", name, v)
	}
	return n, nil
}

func durationEnvOr(getenv func(string) string, name string, def time.Duration) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s=%q: want a duration such as 90s", name, v)
	}
	return d, nil
}

// DefaultPrices is a starting price table in micro-USD per million tokens,
// as the providers published them in 2025. Prices change: set
// KEEL_MODEL_PRICES (or TransportOptions.Prices) to what you pay. A fresh
// map each call, so a caller may change it.
func DefaultPrices() model.PriceTable {
	return model.PriceTable{
		"claude-opus-4-1":   {Input: 15_000_000, Output: 75_000_000, CacheRead: 1_500_000, CacheWrite: 18_750_000},
		"claude-sonnet-4-5": {Input: 3_000_000, Output: 15_000_000, CacheRead: 300_000, CacheWrite: 3_750_000},
		"claude-haiku-4-5":  {Input: 1_000_000, Output: 5_000_000, CacheRead: 100_000, CacheWrite: 1_250_000},
		"gpt-4.1":           {Input: 2_000_000, Output: 8_000_000, CacheRead: 500_000},
		"gpt-4.1-mini":      {Input: 400_000, Output: 1_600_000, CacheRead: 100_000},
		"gpt-4o":            {Input: 2_500_000, Output: 10_000_000, CacheRead: 1_250_000},
		"gpt-4o-mini":       {Input: 150_000, Output: 600_000, CacheRead: 75_000},
	}
}
