package compose

import (
	"context"
	"fmt"

	"github.com/keelrun/keel/internal/aws/roles"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// needsSFN reports whether a Lambda role calls Step Functions: the api
// (StartExecution, SendTaskSuccess), approval (a decision that came first),
// schedule (StartExecution) and sweep (DescribeExecution). Step and
// finalize answer the state machine through their return values only, so
// their bootstraps need no Step Functions client.
func needsSFN(role string) bool {
	switch role {
	case config.RoleAPI, config.RoleApproval, config.RoleSchedule, config.RoleSweep:
		return roles.Serves(role)
	}
	return false
}

// lambdaRole builds the handler of the role d.Config.Role names. Each case
// is guarded by roles.Serves with a constant role: in a binary narrowed to
// one role (-tags keel_role_<role>) the other cases are compiled out, and
// with them all that only they link.
func lambdaRole(ctx context.Context, d Deps) (any, flusher, error) {
	role := d.Config.Role
	switch {
	case roles.Serves(config.RoleAPI) && role == config.RoleAPI:
		fn, err := NewAPI(ctx, d)
		if err != nil {
			return nil, nil, err
		}
		return fn.Handle, fn, nil
	case roles.Serves(config.RoleStep) && role == config.RoleStep:
		fn, err := NewStep(ctx, d)
		if err != nil {
			return nil, nil, err
		}
		return fn.Handle, fn, nil
	case roles.Serves(config.RoleApproval) && role == config.RoleApproval:
		fn, err := NewApproval(ctx, d)
		if err != nil {
			return nil, nil, err
		}
		return fn.Handle, fn, nil
	case roles.Serves(config.RoleFinalize) && role == config.RoleFinalize:
		fn, err := NewFinalize(ctx, d)
		if err != nil {
			return nil, nil, err
		}
		return fn.Handle, fn, nil
	case roles.Serves(config.RoleSchedule) && role == config.RoleSchedule:
		fn, err := NewSchedule(ctx, d)
		if err != nil {
			return nil, nil, err
		}
		return fn.Handle, fn, nil
	case roles.Serves(config.RoleSweep) && role == config.RoleSweep:
		fn, err := NewSweep(ctx, d)
		if err != nil {
			return nil, nil, err
		}
		return fn.Handle, fn, nil
	case !roles.Serves(role):
		return nil, nil, fmt.Errorf("KEEL_ROLE %q: this binary serves only the %s role (built with -tags keel_role_%s)", role, roles.Built, roles.Built)
	}
	return nil, nil, fmt.Errorf("KEEL_ROLE %q is not a Lambda role", role)
}

// newRegistry is the tool registry's constructor. A deployed role build
// (roles.Narrowed) compiles each tool's schema at its first validation,
// not at start: the api, approval, finalize, schedule and sweep roles
// never validate a tool call, and compiling the JSON Schema meta-schema
// was the largest part of their init (10–17 ms). keel dev, keel verify
// and the tests build the same agents with the eager constructor, which
// reports a schema that does not compile before anything is deployed.
func newRegistry(tools ...tool.Tool) (*tool.Registry, error) {
	if roles.Narrowed {
		return tool.NewLazyRegistry(tools...)
	}
	return tool.NewRegistry(tools...)
}
