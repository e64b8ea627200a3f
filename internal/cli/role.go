package cli

import (
	"context"
	"fmt"

	"github.com/keelrun/keel/internal/aws/roles"
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/config"
)

// serveRole plays the role KEEL_ROLE names: a Lambda role served on the
// Lambda Runtime API, or the long-running task. Errors are logged as JSON
// (CloudWatch reads them) and exit 1: Lambda reports an init failure.
func (c *cli) serveRole(ctx context.Context, role string) int {
	cfg, err := c.readConfig()
	if err != nil {
		// Log as the role would: JSON, at the level asked for if it parses.
		cfg.Role = role
	}
	log := cfg.Logger(c.stderr)
	if !roles.Serves(role) {
		// Before the configuration's own checks: they would name what this
		// role needs, not that the binary is the wrong one.
		log.Error("keel: "+role+" failed", "err", fmt.Errorf("KEEL_ROLE=%s: this binary serves only the %s role (built with -tags keel_role_%s)", role, roles.Built, roles.Built))
		return exitFailure
	}
	if err == nil {
		err = c.role(ctx, cfg.Defaults())
	}
	if err != nil {
		log.Error("keel: "+role+" failed", "err", err)
		return exitFailure
	}
	return exitOK
}

// noCommandLine is a role build's answer to anything but KEEL_ROLE: it
// has no commands (see roles.Built).
func (c *cli) noCommandLine() int {
	fmt.Fprintf(c.stderr, "keel: this binary serves only the %[1]s role (built with -tags keel_role_%[1]s): set KEEL_ROLE=%[1]s, or build without a keel_role_* tag for the command line\n", roles.Built)
	return exitUsage
}

func (c *cli) role(ctx context.Context, cfg config.Config) error {
	log := cfg.Logger(c.stderr)
	if !roles.Serves(cfg.Role) {
		return fmt.Errorf("KEEL_ROLE=%s: this binary serves only the %s role (built with -tags keel_role_%s)", cfg.Role, roles.Built, roles.Built)
	}
	if roles.Serves(config.RoleTask) && cfg.Role == config.RoleTask {
		return c.runTask(ctx, cfg)
	}
	if c.getenv("AWS_LAMBDA_RUNTIME_API") == "" {
		return fmt.Errorf("KEEL_ROLE=%s is a Lambda role, but AWS_LAMBDA_RUNTIME_API is not set (not running under Lambda)", cfg.Role)
	}
	d, err := compose.LambdaDeps(cfg, c.app, c.getenv, log)
	if err != nil {
		return err
	}
	return compose.ServeLambda(ctx, d)
}

// runTask is the long-running task: on Fargate (KEEL_ROLE=task) it
// answers AWS Step Functions; as keel dev's child (`task`, with
// KEEL_SFN_ENDPOINT) it answers keel dev's local endpoint. SIGTERM (ctx)
// ends it after the current step.
func (c *cli) runTask(ctx context.Context, cfg config.Config) error {
	log := cfg.Logger(c.stderr)
	if cfg.RunID == "" || cfg.TaskToken == "" {
		return usagef("KEEL_RUN_ID and KEEL_TASK_TOKEN are required (keel dev or RunOnFargate sets them)")
	}
	d, tokens, err := compose.TaskDeps(ctx, cfg, c.app, log)
	if err != nil {
		return err
	}
	return compose.RunTask(context.WithoutCancel(ctx), d, tokens, ctx.Done())
}

// taskCommand is the long-running task run as a child process by keel dev
// (on AWS, the same code runs in Fargate with KEEL_ROLE=task).
func taskCommand() command {
	return command{
		usage:   "",
		summary: "(internal) the long-running task keel dev starts for a spilled run",
		run: func(ctx context.Context, c *cli, args []string) error {
			cfg, err := c.config()
			if err != nil {
				return err
			}
			if cfg.SFNEndpoint == "" {
				return usagef("KEEL_SFN_ENDPOINT is not set (keel dev sets it for its task)")
			}
			return c.runTask(ctx, cfg.Defaults())
		},
	}
}
