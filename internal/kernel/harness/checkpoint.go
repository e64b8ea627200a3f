package harness

// A checkpoint's state: the messages its step added to the transcript,
// and the version of the Step that wrote the first of its Step.

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
)

type checkpointState struct {
	Messages []model.Message `json:"messages"`
	// AgentVersion is the version of the Step that wrote the checkpoint,
	// on the first checkpoint of each Step only (it costs bytes per step).
	AgentVersion string `json:"agent_version,omitempty"`
}

// readState decodes a checkpoint's state, inline or from the artifact
// store (verified against its hash).
func readState(ctx context.Context, arts artifact.Store, cp run.Checkpoint) (checkpointState, error) {
	data := cp.State
	if cp.StateRef != "" {
		if arts == nil {
			return checkpointState{}, fmt.Errorf("checkpoint %s is in the artifact store, which is not configured", cp.ID)
		}
		k, err := artifact.ParsePath(cp.StateRef)
		if err != nil {
			return checkpointState{}, err
		}
		b, info, err := arts.Get(ctx, k)
		if err != nil {
			return checkpointState{}, fmt.Errorf("checkpoint %s state: %w", cp.ID, err)
		}
		if cp.StateHash != "" && info.SHA256 != cp.StateHash {
			return checkpointState{}, fmt.Errorf("checkpoint %s state: %w", cp.ID, artifact.ErrCorrupt)
		}
		data = b
	}
	var st checkpointState
	if err := json.Unmarshal(data, &st); err != nil {
		return checkpointState{}, fmt.Errorf("checkpoint %s state: %w", cp.ID, err)
	}
	return st, nil
}
