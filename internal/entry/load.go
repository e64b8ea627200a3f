package entry

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/config"
)

// Load is the first half of every entrypoint's main: it reads the
// environment for role ("lambda/step", "fargate"), loads the default AWS
// configuration (credentials, region, AWS_ENDPOINT_URL) and builds the
// dependencies. Only mains call it; constructors and tests take an injected
// aws.Config through AWSDeps.
func Load(ctx context.Context, getenv func(string) string, role string) (Deps, *slog.Logger, error) {
	log := Logger(getenv)
	env, err := FromEnv(getenv, role)
	if err != nil {
		return Deps{}, log, err
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return Deps{}, log, fmt.Errorf("AWS configuration: %w", err)
	}
	deps, err := AWSDeps(env, awsCfg, log)
	return deps, log, err
}
