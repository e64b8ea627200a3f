//go:build !keel_no_models

package compose

import (
	"context"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/keelrun/keel/internal/aws/roles"
	"github.com/keelrun/keel/internal/backend/model/provider"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/kernel/model"
)

// awsModels is the NewModel of the AWS roles. Only step and the task call
// models; the api, approval, finalize, schedule and sweep roles build the
// agents for their names and defaults, and get a model that refuses every
// call: building a real one would read an API key from Secrets Manager at
// every cold start for nothing. (A build narrowed to one of those roles
// has models_none.go instead, which links no provider and no Secrets
// Manager client.)
func awsModels(cfg config.Config, awsCfg aws.Config, log *slog.Logger) func(ctx context.Context, spec string) (model.Model, error) {
	if !roles.CallsModels(cfg.Role) {
		return refuseModels(cfg.Role)
	}
	secrets := provider.SecretsManager(secretsmanager.NewFromConfig(awsCfg))
	return func(ctx context.Context, spec string) (model.Model, error) {
		return provider.New(ctx, spec, cfg.Models, provider.Deps{AWS: &awsCfg, Secrets: secrets, Logger: log})
	}
}
