package provider

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/keelrun/keel/internal/kernel/model"
)

// SecretGetter reads a secret's string value by its id (an ARN): the one
// Secrets Manager call the chooser makes. SecretsManager adapts the SDK's
// client. The interface names no SDK type, so that a build which reads
// no key (a role that calls no model) does not link the Secrets Manager
// client at all: its package initialisers alone cost a quarter of a
// megabyte of bootstrap.
type SecretGetter interface {
	SecretString(ctx context.Context, id string) (string, error)
}

// Factory builds a Model for a provider that is not built in, from the
// part of the spec after the colon. The harness registers "scripted" this
// way, so that this package does not depend on it.
type Factory func(ctx context.Context, arg string) (model.Model, error)

// Deps are the clients and shared state New takes from the process; its
// configuration comes in Settings. Each field is needed only by the
// providers that use it.
type Deps struct {
	// HTTPClient is given to the Anthropic and OpenAI SDKs; nil: theirs.
	HTTPClient *http.Client
	// AWS is the loaded AWS configuration, required for bedrock.
	AWS *aws.Config
	// Secrets reads the API keys named by Settings' secret ARNs.
	Secrets SecretGetter
	// Limiter is the process's token-rate limiter. When nil and
	// Settings.TokensPerMinute is positive, New makes one for the Model it
	// returns: share that Model, or pass one Limiter to every New.
	Limiter *model.TokenLimiter
	// RateLimits are the process's 429 counters; nil: the Model's own.
	RateLimits *model.RateLimitCounters
	// Factories add providers by name ("scripted").
	Factories map[string]Factory
	// Transport is the base of the transport options (tests inject Sleep
	// and Jitter here); the Settings that are set override its fields.
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

// New builds the Model a spec names ("anthropic:claude-sonnet-4-5", the
// value of KEEL_MODEL): a built-in provider configured by s and wrapped in
// model.NewTransport, or what a registered Factory returns (as is; s is
// not used). It does no I/O except reading a key from Secrets Manager
// when the provider's secret ARN is set.
func New(ctx context.Context, spec string, s Settings, deps Deps) (model.Model, error) {
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
	var st model.Streamer
	switch sp.Provider {
	case "anthropic":
		st, err = newAnthropic(ctx, sp, s, deps)
	case "openai":
		st, err = newOpenAI(ctx, sp, s, deps)
	case "bedrock":
		st, err = newBedrock(sp, s, deps)
	default:
		known := []string{"anthropic", "bedrock", "openai"}
		for name := range deps.Factories {
			known = append(known, name)
		}
		slices.Sort(known)
		return nil, fmt.Errorf("model spec %q: unknown provider %q (want one of: %s)", spec, sp.Provider, strings.Join(slices.Compact(known), ", "))
	}
	if err != nil {
		return nil, err
	}
	return model.NewTransport(st, transportOptions(sp, s, deps)), nil
}

func transportOptions(sp Spec, s Settings, deps Deps) model.TransportOptions {
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
	if s.MaxAttempts > 0 {
		o.MaxAttempts = s.MaxAttempts
	}
	if s.IdleTimeout > 0 {
		o.IdleTimeout = s.IdleTimeout
	}
	if s.MaxInlineWait > 0 {
		o.MaxInlineWait = s.MaxInlineWait
	}
	if o.Limiter == nil && s.TokensPerMinute > 0 {
		o.Limiter = model.NewTokenLimiter(int64(s.TokensPerMinute), time.Now)
	}
	if o.Prices == nil {
		o.Prices = DefaultPrices()
	}
	if len(s.Prices) > 0 {
		prices := maps.Clone(o.Prices)
		maps.Copy(prices, s.Prices)
		o.Prices = prices
	}
	return o
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
