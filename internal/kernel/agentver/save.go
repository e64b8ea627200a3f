package agentver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/artifact"
)

// ErrUnknown: no definition is stored under the version.
var ErrUnknown = errors.New("agent version definition not found")

// keyRun is the artifact prefix definitions live under; no run id has
// this form (run ids are run_…), so it never mixes with a run's blobs.
const keyRun = "agent-versions"

func key(agent, version string) artifact.Key {
	return artifact.Key{RunID: keyRun, CheckpointID: agent, Name: version + ".json"}
}

// Save stores d under its version. It is idempotent: every worker that
// runs the version saves the same bytes, and the artifact store keeps the
// first.
func Save(ctx context.Context, arts artifact.Store, d Definition) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	if _, err := arts.Put(ctx, key(d.Agent, d.Version), b); err != nil && !errors.Is(err, artifact.ErrExists) {
		return fmt.Errorf("save agent version %s: %w", Short(d.Version), err)
	}
	return nil
}

// Load reads the definition of agent's version; ErrUnknown when none was
// saved.
func Load(ctx context.Context, arts artifact.Store, agent, version string) (Definition, error) {
	b, _, err := arts.Get(ctx, key(agent, version))
	if errors.Is(err, artifact.ErrNotFound) {
		return Definition{}, fmt.Errorf("%w: %s %s", ErrUnknown, agent, Short(version))
	}
	if err != nil {
		return Definition{}, err
	}
	var d Definition
	if err := json.Unmarshal(b, &d); err != nil {
		return Definition{}, fmt.Errorf("agent version %s: %w", Short(version), err)
	}
	if d.Version != version {
		return Definition{}, fmt.Errorf("agent version %s: stored definition names %s", Short(version), Short(d.Version))
	}
	return d, nil
}
