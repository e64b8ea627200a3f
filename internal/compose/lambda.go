package compose

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
)

// ServeLambda builds the Lambda role d.Config.Role names and serves it on
// the Lambda Runtime API. It returns only when the role cannot be built;
// lambda.Start itself never returns.
func ServeLambda(ctx context.Context, d Deps) error {
	handler, fl, err := lambdaRole(ctx, d)
	if err != nil {
		return err
	}
	inner := lambda.NewHandlerWithOptions(handler, lambda.WithContext(ctx))
	lambda.StartWithOptions(flushing{h: inner, fl: fl, log: d.logger()}, lambda.WithContext(ctx))
	return nil
}

type flusher interface {
	Flush(ctx context.Context) error
}

// flushing exports each invocation's spans and metrics before it answers:
// Lambda freezes the process between invocations (and may never thaw
// it), so nothing may wait in a batch.
type flushing struct {
	h   lambda.Handler
	fl  flusher
	log *slog.Logger
}

func (f flushing) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	out, err := f.h.Invoke(ctx, payload)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	if ferr := f.fl.Flush(fctx); ferr != nil {
		f.log.Warn("telemetry not flushed", "err", ferr)
	}
	cancel()
	return out, err
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
