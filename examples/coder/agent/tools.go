package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/keelrun/keel"
)

// WriteArgs are write_file's arguments.
type WriteArgs struct {
	Path    string `json:"path" jsonschema:"description=slash-separated path in the workspace"`
	Content string `json:"content"`
}

// writeFile is read-only for Keel: it changes only the workspace, which a
// crash restores from the checkpoint, so running it again is safe.
func writeFile() keel.Tool {
	return keel.ReadOnly("write_file", "create or replace a file of the workspace", func(ctx context.Context, a WriteArgs) (string, error) {
		w, err := keel.RunWorkspace(ctx)
		if err != nil {
			return "", err
		}
		if err := w.WriteFile(a.Path, []byte(a.Content), 0o644); err != nil {
			return "", err
		}
		return "written " + a.Path, nil
	})
}

// HashArgs are hash_file's arguments.
type HashArgs struct {
	Path string `json:"path"`
}

// Hash is what hash_file answers: what an approval of shipping the file
// binds.
type Hash struct {
	Path             string `json:"path"`
	SHA256           string `json:"sha256"`
	Size             int    `json:"size"`
	WorkspaceVersion string `json:"workspace_version"`
}

func hashFile() keel.Tool {
	return keel.ReadOnly("hash_file", "the sha256 of a workspace file and the workspace version holding it", func(ctx context.Context, a HashArgs) (Hash, error) {
		w, err := keel.RunWorkspace(ctx)
		if err != nil {
			return Hash{}, err
		}
		b, err := w.ReadFile(a.Path)
		if err != nil {
			return Hash{}, err
		}
		// Version is the last recorded tree; the file was made by an
		// earlier call, so that version holds it as read here.
		return Hash{Path: a.Path, SHA256: sha256Hex(b), Size: len(b), WorkspaceVersion: w.Version()}, nil
	})
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
