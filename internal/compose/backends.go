package compose

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/keelrun/keel/internal/aws/awsbackend"
	artfs "github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/backend/model/provider"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/runspace"
)

// Backends open what a configuration names beyond the embedded default:
// the DynamoDB store and S3 artifacts, and the model providers. Tests set
// the fields to point the runtime at test servers; production builds them
// with [LoadBackends].
type Backends struct {
	// AWSStore and AWSArtifacts open the dynamo and s3 kinds; nil makes
	// those kinds an error.
	AWSStore     func(ctx context.Context, table string, arts artifact.Store) (store.Store, error)
	AWSArtifacts func(ctx context.Context, bucket string) (artifact.Store, error)
	// AWSCommandRunner is the client of KEEL_COMMAND_RUNNER's function;
	// nil when the AWS configuration was not loaded.
	AWSCommandRunner func(function, bucket string) (runspace.Remote, error)
	// NewModel builds a provider model from a spec such as
	// "anthropic:claude-sonnet-4-5"; nil allows only scripted models.
	NewModel func(ctx context.Context, spec string) (model.Model, error)
	// WrapScripted wraps a scripted model's streamer; nil puts it behind
	// the same transport as the real providers (whole-call retry, idle
	// timeout, 429 handling), so scripted faults meet the real rules.
	WrapScripted  func(s model.Streamer) model.Model
	SQLiteOptions SQLiteOptions
	// Faults replace the configuration's fault points (tests).
	Faults harness.FaultPoints
	Logger *slog.Logger
}

func (b Backends) logger() *slog.Logger {
	if b.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return b.Logger
}

// AWSBackends returns Backends on an injected AWS configuration: the
// DynamoDB store, S3 artifacts, and the providers (Bedrock on awsCfg, API
// keys from the settings or from Secrets Manager) — for a role that calls
// models (step, task, or no role); the other roles get models that refuse
// every call, so they read no API key and build no provider client
// (models.go).
func AWSBackends(cfg config.Config, awsCfg aws.Config, log *slog.Logger) Backends {
	b := awsbackend.Backends(awsCfg, awsbackend.Options{S3PathStyle: cfg.S3PathStyle, Logger: log})
	out := Backends{AWSStore: b.Store, AWSArtifacts: b.Artifacts, AWSCommandRunner: b.CommandRunner, Logger: log}
	out.NewModel = awsModels(cfg, awsCfg, log)
	return out
}

// LoadBackends builds Backends for cfg in a real process: when the store
// or artifacts are on AWS, or the process plays an AWS role, it loads the
// default AWS configuration (credentials, region, AWS_ENDPOINT_URL; the
// region defaults to us-east-1 so a local endpoint needs no more).
// Otherwise it loads it only when a bedrock model is built.
func LoadBackends(ctx context.Context, cfg config.Config, log *slog.Logger) (Backends, error) {
	load := loadAWSConfig
	if cfg.NeedsAWS() || cfg.Role != "" {
		awsCfg, err := load(ctx)
		if err != nil {
			return Backends{}, err
		}
		return AWSBackends(cfg, awsCfg, log), nil
	}
	return Backends{Logger: log, NewModel: func(ctx context.Context, spec string) (model.Model, error) {
		deps := provider.Deps{Logger: log}
		if sp, err := provider.ParseSpec(spec); err == nil && sp.Provider == "bedrock" {
			awsCfg, err := load(ctx)
			if err != nil {
				return nil, err
			}
			deps.AWS = &awsCfg
		}
		return provider.New(ctx, spec, cfg.Models, deps)
	}}, nil
}

func openArtifacts(ctx context.Context, spec string, b Backends) (artifact.Store, error) {
	kind, arg, _ := strings.Cut(spec, ":")
	var s artifact.Store
	var err error
	switch kind {
	case "fs":
		s, err = artfs.New(arg)
	case "s3":
		if b.AWSArtifacts == nil {
			return nil, fmt.Errorf("KEEL_ARTIFACTS %q: s3 needs the AWS configuration, which was not loaded", spec)
		}
		s, err = b.AWSArtifacts(ctx, arg)
	}
	if err != nil {
		return nil, fmt.Errorf("KEEL_ARTIFACTS %q: %w", spec, err)
	}
	return s, nil
}

func openStore(ctx context.Context, spec string, arts artifact.Store, b Backends) (store.Store, *SQLiteStore, error) {
	kind, arg, _ := strings.Cut(spec, ":")
	switch kind {
	case "sqlite":
		s, err := openSQLite(ctx, arg, b.SQLiteOptions)
		if err != nil {
			return nil, nil, fmt.Errorf("KEEL_STORE %q: %w", spec, err)
		}
		return s, s, nil
	case "dynamo":
		if b.AWSStore == nil {
			return nil, nil, fmt.Errorf("KEEL_STORE %q: dynamo needs the AWS configuration, which was not loaded", spec)
		}
		s, err := b.AWSStore(ctx, arg, arts)
		if err != nil {
			return nil, nil, fmt.Errorf("KEEL_STORE %q: %w", spec, err)
		}
		return s, nil, nil
	}
	return nil, nil, fmt.Errorf("KEEL_STORE %q: want sqlite:PATH or dynamo:TABLE", spec)
}
