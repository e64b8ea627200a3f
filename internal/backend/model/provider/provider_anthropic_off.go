//go:build keel_no_anthropic || keel_no_models

package provider

import (
	"context"

	"github.com/keelrun/keel/internal/kernel/model"
)

func newAnthropic(context.Context, Spec, Settings, Deps) (model.Streamer, error) {
	return nil, errOmitted("anthropic", "keel_no_anthropic")
}
