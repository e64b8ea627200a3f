package provider

import (
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/keelrun/keel/internal/kernel/model"
)

// Settings are the model configuration of a process, parsed. A zero field
// is unset: New then keeps Deps.Transport's value, which, when zero too,
// takes model.NewTransport's default.
//
// Settings hold API keys: String, GoString and LogValue print each key
// only as set or unset, so a Settings may be logged. Read a key field
// only to hand it to a provider.
type Settings struct {
	// MaxTokens is KEEL_MODEL_MAX_TOKENS, the output bound of one call;
	// 0: the provider's default.
	MaxTokens int
	// MaxAttempts is KEEL_MODEL_MAX_ATTEMPTS, the tries of one call, the
	// first included (model.DefaultMaxAttempts when zero).
	MaxAttempts int
	// IdleTimeout is KEEL_MODEL_IDLE_TIMEOUT, the longest silence of a
	// stream before the attempt is a stall (model.DefaultIdleTimeout).
	IdleTimeout time.Duration
	// MaxInlineWait is KEEL_MODEL_MAX_INLINE_WAIT, the longest wait slept
	// through inline before it becomes a durable one
	// (model.DefaultMaxInlineWait).
	MaxInlineWait time.Duration
	// TokensPerMinute is KEEL_MODEL_TPM. When positive and Deps.Limiter is
	// nil, New makes a token-rate limiter of this rate for the Model it
	// returns; 0: no limit.
	TokensPerMinute int
	// Prices is KEEL_MODEL_PRICES (a JSON model.PriceTable): entries that
	// add to or replace those of Deps.Transport.Prices, or of
	// DefaultPrices when that is nil.
	Prices model.PriceTable

	// AnthropicAPIKey is ANTHROPIC_API_KEY, used when AnthropicSecretARN
	// is empty.
	AnthropicAPIKey string
	// AnthropicBaseURL is ANTHROPIC_BASE_URL; empty: the SDK's.
	AnthropicBaseURL string
	// AnthropicSecretARN is KEEL_ANTHROPIC_SECRET_ARN, or else
	// KEEL_MODEL_SECRET_ARN: the Secrets Manager secret that holds the
	// Anthropic key. It wins over AnthropicAPIKey.
	AnthropicSecretARN string

	// OpenAIAPIKey is OPENAI_API_KEY, used when OpenAISecretARN is empty.
	OpenAIAPIKey string
	// OpenAIBaseURL is OPENAI_BASE_URL; empty: the SDK's.
	OpenAIBaseURL string
	// OpenAISecretARN is KEEL_OPENAI_SECRET_ARN, or else
	// KEEL_MODEL_SECRET_ARN: the Secrets Manager secret that holds the
	// OpenAI key. It wins over OpenAIAPIKey.
	OpenAISecretARN string
}

// ParseSettings reads Settings through getenv (os.Getenv in production).
// It is the only reader of the environment in this package, and it does
// not read KEEL_MODEL: which model to build is the caller's choice, passed
// to New as its spec.
//
// KEEL_MODEL_SECRET_ARN, the one secret the CDK stack makes, stands for
// KEEL_ANTHROPIC_SECRET_ARN and KEEL_OPENAI_SECRET_ARN when those are
// unset. An error names the variable and its value; the API key variables
// are never parsed, so no error carries a key.
func ParseSettings(getenv func(string) string) (Settings, error) {
	var s Settings
	var err error
	if s.MaxTokens, err = intVar(getenv, "KEEL_MODEL_MAX_TOKENS"); err != nil {
		return Settings{}, err
	}
	if s.MaxAttempts, err = intVar(getenv, "KEEL_MODEL_MAX_ATTEMPTS"); err != nil {
		return Settings{}, err
	}
	if s.IdleTimeout, err = durationVar(getenv, "KEEL_MODEL_IDLE_TIMEOUT"); err != nil {
		return Settings{}, err
	}
	if s.MaxInlineWait, err = durationVar(getenv, "KEEL_MODEL_MAX_INLINE_WAIT"); err != nil {
		return Settings{}, err
	}
	if s.TokensPerMinute, err = intVar(getenv, "KEEL_MODEL_TPM"); err != nil {
		return Settings{}, err
	}
	if v := getenv("KEEL_MODEL_PRICES"); v != "" {
		if s.Prices, err = model.ParsePriceTable([]byte(v)); err != nil {
			return Settings{}, fmt.Errorf("KEEL_MODEL_PRICES: %w", err)
		}
	}
	shared := getenv("KEEL_MODEL_SECRET_ARN")
	s.AnthropicAPIKey = getenv("ANTHROPIC_API_KEY")
	s.AnthropicBaseURL = getenv("ANTHROPIC_BASE_URL")
	s.AnthropicSecretARN = or(getenv("KEEL_ANTHROPIC_SECRET_ARN"), shared)
	s.OpenAIAPIKey = getenv("OPENAI_API_KEY")
	s.OpenAIBaseURL = getenv("OPENAI_BASE_URL")
	s.OpenAISecretARN = or(getenv("KEEL_OPENAI_SECRET_ARN"), shared)
	return s, nil
}

// redacted is what String, GoString and LogValue print for a key that is
// set.
const redacted = "[redacted]"

// settingsNoMethods formats like Settings without calling its methods.
type settingsNoMethods Settings

func (s Settings) redact() settingsNoMethods {
	if s.AnthropicAPIKey != "" {
		s.AnthropicAPIKey = redacted
	}
	if s.OpenAIAPIKey != "" {
		s.OpenAIAPIKey = redacted
	}
	return settingsNoMethods(s)
}

// String prints s as %+v would, with each API key as [redacted].
func (s Settings) String() string { return fmt.Sprintf("%+v", s.redact()) }

// GoString prints s as %#v would, with each API key as [redacted].
func (s Settings) GoString() string {
	return fmt.Sprintf("provider.Settings%+v", s.redact())
}

// LogValue logs s with each API key as [redacted].
func (s Settings) LogValue() slog.Value {
	r := s.redact()
	return slog.GroupValue(
		slog.Int("max_tokens", r.MaxTokens),
		slog.Int("max_attempts", r.MaxAttempts),
		slog.Duration("idle_timeout", r.IdleTimeout),
		slog.Duration("max_inline_wait", r.MaxInlineWait),
		slog.Int("tokens_per_minute", r.TokensPerMinute),
		slog.Int("prices", len(r.Prices)),
		slog.String("anthropic_api_key", r.AnthropicAPIKey),
		slog.String("anthropic_base_url", r.AnthropicBaseURL),
		slog.String("anthropic_secret_arn", r.AnthropicSecretARN),
		slog.String("openai_api_key", r.OpenAIAPIKey),
		slog.String("openai_base_url", r.OpenAIBaseURL),
		slog.String("openai_secret_arn", r.OpenAISecretARN),
	)
}

var (
	_ fmt.Stringer   = Settings{}
	_ fmt.GoStringer = Settings{}
	_ slog.LogValuer = Settings{}
)

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func intVar(getenv func(string) string, name string) (int, error) {
	v := getenv(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: want a non-negative integer", name, v)
	}
	return n, nil
}

func durationVar(getenv func(string) string, name string) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s=%q: want a non-negative duration such as 90s", name, v)
	}
	return d, nil
}
