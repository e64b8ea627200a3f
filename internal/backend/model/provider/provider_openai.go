//go:build !keel_no_openai && !keel_no_models

package provider

import (
	"context"

	"github.com/keelrun/keel/internal/backend/model/openai"
	"github.com/keelrun/keel/internal/kernel/model"
)

func newOpenAI(ctx context.Context, sp Spec, s Settings, deps Deps) (model.Streamer, error) {
	key, err := apiKey(ctx, deps.Secrets, s.OpenAIAPIKey, s.OpenAISecretARN, "OPENAI_API_KEY", "KEEL_OPENAI_SECRET_ARN")
	if err != nil {
		return nil, err
	}
	return openai.New(openai.Config{
		Model: sp.Model, APIKey: key, BaseURL: s.OpenAIBaseURL,
		HTTPClient: deps.HTTPClient, MaxTokens: s.MaxTokens,
	})
}
