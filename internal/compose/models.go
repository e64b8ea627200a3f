package compose

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/model"
	"github.com/keelrun/keel/internal/model/provider"
	"github.com/keelrun/keel/internal/roles"
)

// buildCallsModels is a constant: false in a binary narrowed to a role
// that calls no model (-tags keel_role_api ...), so the compiler drops the
// provider wiring below and the linker the SDKs it reaches.
const buildCallsModels = roles.Built == "" || roles.Built == config.RoleStep || roles.Built == config.RoleTask

// awsModels is the NewModel of the AWS roles. Only step and the task call
// models; the api, approval, finalize, schedule and sweep roles build the
// agents for their names and defaults, and get a model that refuses every
// call: building a real one would read an API key from Secrets Manager at
// every cold start for nothing.
func awsModels(cfg config.Config, awsCfg aws.Config, log *slog.Logger) func(ctx context.Context, spec string) (model.Model, error) {
	if !buildCallsModels || !roles.CallsModels(cfg.Role) {
		return func(_ context.Context, spec string) (model.Model, error) {
			return noModel{role: cfg.Role, spec: spec}, nil
		}
	}
	secrets := secretsmanager.NewFromConfig(awsCfg)
	return func(ctx context.Context, spec string) (model.Model, error) {
		return provider.New(ctx, spec, cfg.Models, provider.Deps{AWS: &awsCfg, Secrets: secrets, Logger: log})
	}
}

// noModel is the model of a role that calls none.
type noModel struct{ role, spec string }

func (m noModel) Generate(context.Context, model.Request) (model.Response, error) {
	return model.Response{}, fmt.Errorf("model %q: the %s role calls no model (only step and task do)", m.spec, m.role)
}
