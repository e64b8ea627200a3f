//go:build keel_no_anthropic || keel_role_api || keel_role_approval || keel_role_finalize || keel_role_schedule || keel_role_sweep

package provider

import (
	"context"

	"github.com/keelrun/keel/internal/model"
)

func newAnthropic(context.Context, Spec, Settings, Deps) (model.Streamer, error) {
	return nil, errOmitted("anthropic", "keel_no_anthropic")
}
