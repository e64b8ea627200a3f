//go:build !keel_no_bedrock && !keel_no_models

package provider

import (
	"errors"

	"github.com/keelrun/keel/internal/backend/model/bedrock"
	"github.com/keelrun/keel/internal/kernel/model"
)

func newBedrock(sp Spec, s Settings, deps Deps) (model.Streamer, error) {
	if deps.AWS == nil {
		return nil, errors.New("bedrock: no AWS configuration given")
	}
	return bedrock.New(*deps.AWS, bedrock.Config{ModelID: sp.Model, MaxTokens: s.MaxTokens})
}
