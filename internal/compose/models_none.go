//go:build keel_no_models

package compose

import (
	"context"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/kernel/model"
)

// awsModels, in a build with keel_no_models (a role that calls no model), refuses
// every call: no provider, no API key, no Secrets Manager client linked.
func awsModels(cfg config.Config, _ aws.Config, _ *slog.Logger) func(ctx context.Context, spec string) (model.Model, error) {
	return refuseModels(cfg.Role)
}
