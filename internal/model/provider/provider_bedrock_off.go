//go:build keel_no_bedrock || keel_role_api || keel_role_approval || keel_role_finalize || keel_role_schedule || keel_role_sweep

package provider

import "github.com/keelrun/keel/internal/model"

func newBedrock(Spec, Settings, Deps) (model.Streamer, error) {
	return nil, errOmitted("bedrock", "keel_no_bedrock")
}
