package compose

import (
	"context"
	"log/slog"

	"github.com/keelrun/keel/internal/aws/awsbackend"
	"github.com/keelrun/keel/internal/aws/roles"
	"github.com/keelrun/keel/internal/config"
)

// LambdaDeps builds the Deps of the Lambda role cfg.Role names, in that
// function's process: the AWS configuration from the function's
// environment (getenv, awsbackend.EnvConfig: a function's credentials,
// region and endpoints are there, with no shared-config files, SSO or
// IMDS to consult), the backends on it, the Step Functions client for the
// roles that call it ([needsSFN]), and for the sweep role with
// KEEL_STEP_FUNCTION set, the step function's published versions. It
// reads nothing but the AWS variables through getenv; the caller passes
// the configuration it read once.
func LambdaDeps(cfg config.Config, app App, getenv func(string) string, log *slog.Logger) (Deps, error) {
	awsCfg, err := awsbackend.EnvConfig(getenv)
	if err != nil {
		return Deps{}, err
	}
	d := Deps{Config: cfg, App: app, Backends: AWSBackends(cfg, awsCfg, log), Logger: log}
	if needsSFN(cfg.Role) {
		if d.SFN, err = awsbackend.SFN(awsCfg); err != nil {
			return Deps{}, err
		}
	}
	// Guarded by roles.Serves with a constant role: a build narrowed to
	// another role compiles the versions client out.
	if roles.Serves(config.RoleSweep) && cfg.Role == config.RoleSweep && cfg.StepFunction != "" {
		if d.Versions, err = awsbackend.NewStepVersions(awsCfg, cfg.StepFunction); err != nil {
			return Deps{}, err
		}
	}
	return d, nil
}

// TaskDeps builds the Deps of the long-running task ([RunTask]) and the
// task-token client it reports through. As keel dev's child
// (cfg.SFNEndpoint set) that is the backends cfg names ([LoadBackends])
// and keel dev's local Step Functions endpoint; on Fargate, the backends
// on the default AWS configuration ([loadAWSConfig]: the task's container
// credentials) and AWS Step Functions.
func TaskDeps(ctx context.Context, cfg config.Config, app App, log *slog.Logger) (Deps, roles.HeartbeatTokens, error) {
	d := Deps{Config: cfg, App: app, Logger: log}
	if cfg.SFNEndpoint != "" {
		b, err := LoadBackends(ctx, cfg, log)
		if err != nil {
			return Deps{}, nil, err
		}
		d.Backends = b
		tokens, err := awsbackend.LocalSFN(cfg.SFNEndpoint, cfg.SFNToken)
		if err != nil {
			return Deps{}, nil, err
		}
		return d, tokens, nil
	}
	awsCfg, err := loadAWSConfig(ctx)
	if err != nil {
		return Deps{}, nil, err
	}
	d.Backends = AWSBackends(cfg, awsCfg, log)
	tokens, err := awsbackend.SFN(awsCfg)
	if err != nil {
		return Deps{}, nil, err
	}
	return d, tokens, nil
}
