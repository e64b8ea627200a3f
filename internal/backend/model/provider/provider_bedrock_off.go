//go:build keel_no_bedrock || keel_no_models

package provider

import "github.com/keelrun/keel/internal/kernel/model"

func newBedrock(Spec, Settings, Deps) (model.Streamer, error) {
	return nil, errOmitted("bedrock", "keel_no_bedrock")
}
