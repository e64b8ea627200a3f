package compose

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/keelrun/keel/internal/aws/roles"
	"github.com/keelrun/keel/internal/aws/sweeper"
	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/store"
)

// placement says where a run's Steps run when the step function is
// deployed in published versions (roles.Placement): a run of a pinned
// agent goes back to the function version that runs its agent version,
// found among the homes the versions recorded (agentver.Homes).
type placement struct {
	rt *Runtime
}

var _ roles.Placement = placement{}

// Home implements roles.Placement.
func (p placement) Home(ctx context.Context, runID string) (string, bool, error) {
	r, err := p.rt.Store.GetRun(ctx, runID)
	if errors.Is(err, store.ErrNotFound) {
		return "", false, nil // the harness answers for a run that is not there
	}
	if err != nil {
		return "", false, err
	}
	a, ok := p.rt.Agents[r.Agent]
	if !ok || a.Policy != agentver.Pin {
		return "", false, nil
	}
	if r.AgentVersion == "" || r.AgentVersion == a.Version {
		return "", true, nil
	}
	homes, err := agentver.Homes(ctx, p.rt.Artifacts)
	if err != nil {
		return "", true, err
	}
	// No home: the version's code is gone; the harness's check stops
	// the run for a person, naming the versions.
	return agentver.HomeOf(homes, r.Agent, r.AgentVersion), true, nil
}

// recordHomes records that this function version (NAME:N) runs the
// versions of the program's pinned agents, so a later version can send
// their runs back here and the sweeper keeps it while they live. Runs of
// other agents are never sent back to older code: they need no home, and
// a program without pinned agents writes nothing at a cold start.
func (rt *Runtime) recordHomes(ctx context.Context, self string, log *slog.Logger) error {
	for name, a := range rt.Agents {
		if a.Version == "" || a.Policy != agentver.Pin {
			continue
		}
		if err := agentver.SaveHome(ctx, rt.Artifacts, name, a.Version, self); err != nil {
			return fmt.Errorf("agent %s: %w", name, err)
		}
		log.Info("agent version deployed", "agent", name, "version", agentver.Short(a.Version), "function", self)
	}
	return nil
}

// retirement retires the step function versions vs no live run of this
// runtime's store uses (sweeper.Retirement).
func (rt *Runtime) retirement(vs sweeper.Versions) *sweeper.Retirement {
	return &sweeper.Retirement{
		Versions: vs,
		Homes:    func(ctx context.Context) ([]agentver.Home, error) { return agentver.Homes(ctx, rt.Artifacts) },
	}
}
