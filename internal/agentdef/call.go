package agentdef

import (
	"context"

	"github.com/keelrun/keel/internal/kernel/artifact"
)

// Call describes the tool call a context belongs to.
type Call struct {
	RunID        string
	CallID       string // the plan item
	CheckpointID string
	OperationID  string // effects only
	// Progress records done of total units (read-only calls only).
	Progress func(done, total int64, note string)
	// Artifacts is the runtime's artifact store.
	Artifacts artifact.Store
}

type callKey struct{}

// WithCall returns ctx carrying c.
func WithCall(ctx context.Context, c Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallFrom returns the call ctx carries.
func CallFrom(ctx context.Context) (Call, bool) {
	c, ok := ctx.Value(callKey{}).(Call)
	return c, ok
}
