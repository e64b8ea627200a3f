package keel

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/agentdef"
	"github.com/keelrun/keel/internal/kernel/artifact"
)

// CallInfo describes the tool call in progress.
type CallInfo struct {
	RunID string
	// CallID names the call in the run's plan and event log.
	CallID string
	// CheckpointID is the checkpoint the run resumed from for this call;
	// artifacts saved by the call are keyed under it.
	CheckpointID string
	// OperationID is set for an effect: the application-owned id the
	// effect is recorded under, and its idempotency key.
	OperationID string
}

// CurrentCall returns the tool call ctx belongs to; ok is false outside a tool
// call.
func CurrentCall(ctx context.Context) (info CallInfo, ok bool) {
	c, ok := agentdef.CallFrom(ctx)
	return CallInfo{RunID: c.RunID, CallID: c.CallID, CheckpointID: c.CheckpointID, OperationID: c.OperationID}, ok
}

// ReportProgress records done of total units of a long call as a
// tool_progress event (at most one per 10%), which `keel run --watch`, the
// event stream and the API show. Safe from any goroutine; a no-op outside
// a read-only or confirm-once call.
func ReportProgress(ctx context.Context, done, total int64, note string) {
	if c, ok := agentdef.CallFrom(ctx); ok && c.Progress != nil {
		c.Progress(done, total, note)
	}
}

// Artifact is a stored blob: immutable and content-addressed.
type Artifact struct {
	// Path is runs/RUN/checkpoints/CHECKPOINT/NAME: what LoadArtifact
	// and the API's artifact download take.
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// ErrNoArtifactStore is returned by SaveArtifact and LoadArtifact outside
// a tool call.
var ErrNoArtifactStore = errors.New("keel: no artifact store in this context (not a tool call)")

// SaveArtifact stores content as the run's artifact name under the call's
// checkpoint (files under `keel dev`, S3 on AWS). Saving the same name with
// the same content again is a no-op, so a call repeated after a crash
// saves nothing twice; the same name with other content is an error.
func SaveArtifact(ctx context.Context, name string, content []byte) (Artifact, error) {
	c, ok := agentdef.CallFrom(ctx)
	if !ok || c.Artifacts == nil {
		return Artifact{}, ErrNoArtifactStore
	}
	cp := c.CheckpointID
	if cp == "" {
		cp = "start"
	}
	key := artifact.Key{RunID: c.RunID, CheckpointID: cp, Name: name}
	info, err := c.Artifacts.Put(ctx, key, content)
	if err != nil {
		return Artifact{}, fmt.Errorf("save artifact %s: %w", name, err)
	}
	return toArtifact(info), nil
}

// LoadArtifact reads an artifact by its path, checked against its sha256.
func LoadArtifact(ctx context.Context, path string) ([]byte, Artifact, error) {
	c, ok := agentdef.CallFrom(ctx)
	if !ok || c.Artifacts == nil {
		return nil, Artifact{}, ErrNoArtifactStore
	}
	k, err := artifact.ParsePath(path)
	if err != nil {
		return nil, Artifact{}, err
	}
	b, info, err := c.Artifacts.Get(ctx, k)
	if err != nil {
		return nil, Artifact{}, fmt.Errorf("load artifact %s: %w", path, err)
	}
	return b, toArtifact(info), nil
}

func toArtifact(i artifact.Info) Artifact {
	return Artifact{Path: i.Key.Path(), SHA256: i.SHA256, Size: i.Size}
}
