package telemetry

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/workspace"
)

// Workspaces is workspaces.json: each checkpoint's workspace version with
// its manifest (paths, modes, sizes, hashes), never the files' content, so
// a bundle says what the tree was at every checkpoint without carrying it.
type Workspaces struct {
	Versions []WorkspaceVersion `json:"versions"`
}

// WorkspaceVersion is one checkpoint's workspace in workspaces.json.
type WorkspaceVersion struct {
	CheckpointID string              `json:"checkpoint_id"`
	Seq          int64               `json:"seq"`
	Version      string              `json:"version"`
	Files        int                 `json:"files"`
	Bytes        int64               `json:"bytes"`
	Manifest     *workspace.Manifest `json:"manifest,omitempty"`
	// Error says why the manifest is absent: the bundle writer could not
	// read it, or it failed its hash.
	Error string `json:"error,omitempty"`
}

// workspaces reads the manifest of every checkpoint that names a workspace
// version. A manifest that cannot be read is named with its error rather
// than failing the bundle: a bundle is most wanted when something is wrong.
func workspaces(ctx context.Context, b Bundle, arts States) ([]byte, error) {
	out := Workspaces{Versions: []WorkspaceVersion{}}
	for _, cp := range b.Checkpoints {
		if cp.WorkspaceVersion == "" {
			continue
		}
		v := WorkspaceVersion{CheckpointID: cp.ID, Seq: cp.Seq, Version: cp.WorkspaceVersion}
		m, err := readManifest(ctx, arts, cp.WorkspaceVersion)
		if err != nil {
			v.Error = err.Error()
		} else {
			v.Manifest, v.Files, v.Bytes = m, m.Files(), m.TotalBytes()
		}
		out.Versions = append(out.Versions, v)
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("bundle: workspaces.json: %w", err)
	}
	return data, nil
}

func readManifest(ctx context.Context, arts States, version string) (*workspace.Manifest, error) {
	if arts == nil {
		return nil, fmt.Errorf("no artifact store to read manifest %s from", version)
	}
	ver, err := workspace.ParseVersion(version)
	if err != nil {
		return nil, err
	}
	return workspace.ReadManifest(ctx, arts, ver)
}
