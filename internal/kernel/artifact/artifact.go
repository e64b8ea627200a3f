// Package artifact stores large, immutable blobs (reports, large checkpoint
// states, debug bundles) under keys runs/{run_id}/checkpoints/{checkpoint_id}/{name},
// each with the sha256 of its content.
//
// Contracts every backend keeps (checked by artifacttest):
//   - Put returns the sha256 (hex) and size; when it returns nil the blob is
//     durable. Putting the same content at an existing key is a no-op;
//     other content gets ErrExists and the stored blob is unchanged.
//   - Get verifies the content against the stored hash: corrupted data is
//     ErrCorrupt, never returned as if it were good.
//   - List returns every blob of a run, ordered by key.
package artifact

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors.
var (
	ErrNotFound = errors.New("artifact not found")
	ErrExists   = errors.New("artifact exists with other content")
	ErrCorrupt  = errors.New("artifact content does not match its hash")
	ErrInvalid  = errors.New("invalid artifact key")
)

// Key names a blob.
type Key struct {
	RunID        string
	CheckpointID string
	Name         string
}

// Path is the key as stored: runs/{run_id}/checkpoints/{checkpoint_id}/{name}.
func (k Key) Path() string {
	return "runs/" + k.RunID + "/checkpoints/" + k.CheckpointID + "/" + k.Name
}

// Validate refuses keys that are empty or could escape their prefix.
func (k Key) Validate() error {
	for _, p := range []struct{ field, v string }{{"run_id", k.RunID}, {"checkpoint_id", k.CheckpointID}, {"name", k.Name}} {
		if p.v == "" {
			return fmt.Errorf("%w: %s is empty", ErrInvalid, p.field)
		}
		if p.v == "." || p.v == ".." || strings.ContainsAny(p.v, "/\\\x00") || len(p.v) > 200 {
			return fmt.Errorf("%w: %s %q", ErrInvalid, p.field, p.v)
		}
	}
	return nil
}

// ParsePath is the inverse of Key.Path.
func ParsePath(p string) (Key, error) {
	parts := strings.Split(p, "/")
	if len(parts) != 5 || parts[0] != "runs" || parts[2] != "checkpoints" {
		return Key{}, fmt.Errorf("%w: path %q", ErrInvalid, p)
	}
	k := Key{RunID: parts[1], CheckpointID: parts[3], Name: parts[4]}
	return k, k.Validate()
}

// Info describes a stored blob.
type Info struct {
	Key    Key
	SHA256 string
	Size   int64
}

// Store is the blob store.
type Store interface {
	Put(ctx context.Context, k Key, data []byte) (Info, error)
	Get(ctx context.Context, k Key) ([]byte, Info, error)
	List(ctx context.Context, runID string) ([]Info, error)
}
