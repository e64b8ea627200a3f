package compose

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/keelrun/keel/internal/config"
)

// ServeLambda builds the Lambda role d.Config.Role names and serves it on
// the Lambda Runtime API. It returns only when the role cannot be built;
// lambda.Start itself never returns.
func ServeLambda(ctx context.Context, d Deps) error {
	var handler any
	switch d.Config.Role {
	case config.RoleAPI:
		fn, err := NewAPI(ctx, d)
		if err != nil {
			return err
		}
		handler = fn.Handle
	case config.RoleStep:
		fn, err := NewStep(ctx, d)
		if err != nil {
			return err
		}
		handler = fn.Handle
	case config.RoleApproval:
		fn, err := NewApproval(ctx, d)
		if err != nil {
			return err
		}
		handler = fn.Handle
	case config.RoleFinalize:
		fn, err := NewFinalize(ctx, d)
		if err != nil {
			return err
		}
		handler = fn.Handle
	case config.RoleSchedule:
		fn, err := NewSchedule(ctx, d)
		if err != nil {
			return err
		}
		handler = fn.Handle
	case config.RoleSweep:
		fn, err := NewSweep(ctx, d)
		if err != nil {
			return err
		}
		handler = fn.Handle
	default:
		return fmt.Errorf("KEEL_ROLE %q is not a Lambda role", d.Config.Role)
	}
	lambda.StartWithOptions(handler, lambda.WithContext(ctx))
	return nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
