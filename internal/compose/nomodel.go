package compose

import (
	"context"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/model"
)

// refuseModels is the NewModel of a role that calls no model.
func refuseModels(role string) func(ctx context.Context, spec string) (model.Model, error) {
	return func(_ context.Context, spec string) (model.Model, error) {
		return noModel{role: role, spec: spec}, nil
	}
}

// noModel is the model of a role that calls none.
type noModel struct{ role, spec string }

func (m noModel) Generate(context.Context, model.Request) (model.Response, error) {
	return model.Response{}, fmt.Errorf("model %q: the %s role calls no model (only step and task do)", m.spec, m.role)
}
