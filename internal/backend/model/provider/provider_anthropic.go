//go:build !keel_no_anthropic && !keel_no_models

package provider

import (
	"context"

	"github.com/keelrun/keel/internal/backend/model/anthropic"
	"github.com/keelrun/keel/internal/kernel/model"
)

func newAnthropic(ctx context.Context, sp Spec, s Settings, deps Deps) (model.Streamer, error) {
	key, err := apiKey(ctx, deps.Secrets, s.AnthropicAPIKey, s.AnthropicSecretARN, "ANTHROPIC_API_KEY", "KEEL_ANTHROPIC_SECRET_ARN")
	if err != nil {
		return nil, err
	}
	return anthropic.New(anthropic.Config{
		Model: sp.Model, APIKey: key, BaseURL: s.AnthropicBaseURL,
		HTTPClient: deps.HTTPClient, MaxTokens: s.MaxTokens,
	})
}
