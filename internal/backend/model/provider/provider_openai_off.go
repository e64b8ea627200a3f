//go:build keel_no_openai || keel_no_models

package provider

import (
	"context"

	"github.com/keelrun/keel/internal/kernel/model"
)

func newOpenAI(context.Context, Spec, Settings, Deps) (model.Streamer, error) {
	return nil, errOmitted("openai", "keel_no_openai")
}
