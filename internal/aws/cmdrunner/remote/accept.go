package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/keelrun/keel/internal/aws/cmdrunner"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/workspace"
	"github.com/keelrun/keel/internal/runspace"
)

// accept checks the runner's answer and stores it as a version of the
// run: the manifest must hash to the version and name only this run;
// every file's content is either one the tree had (same blob) or a blob
// the runner staged, read back with the worker's role and checked against
// its hash before it is put under the run's prefix. Nothing the runner
// says is stored unchecked.
func (c *Client) accept(ctx context.Context, cmd runspace.RemoteCommand, grant string, resp cmdrunner.Response) (*workspace.Manifest, error) {
	v, err := workspace.ParseVersion(resp.Version)
	if err != nil {
		return nil, err
	}
	if v.RunID != cmd.RunID {
		return nil, fmt.Errorf("%w: the runner answered a version of run %q for run %q", workspace.ErrBadManifest, v.RunID, cmd.RunID)
	}
	mf, err := workspace.DecodeManifest(resp.Manifest, v.SHA256)
	if err != nil {
		return nil, err
	}
	had := map[artifact.Key]bool{}
	if cmd.Manifest != nil {
		for _, e := range cmd.Manifest.Entries {
			if e.Type == workspace.TypeFile {
				had[workspace.BlobKey(e)] = true
			}
		}
	}
	put := map[string]bool{}
	for _, e := range mf.Entries {
		if e.Type != workspace.TypeFile || had[workspace.BlobKey(e)] || put[e.SHA256] {
			continue
		}
		if e.Run != cmd.RunID || !slices.Contains(resp.Staged, e.SHA256) {
			return nil, fmt.Errorf("%w: %s names content %s of run %s that the tree did not have and the runner did not stage", workspace.ErrBlob, e.Path, e.SHA256, e.Run)
		}
		if err := c.promote(ctx, cmd.RunID, grant, e); err != nil {
			return nil, err
		}
		put[e.SHA256] = true
	}
	if _, err := c.Artifacts.Put(ctx, workspace.ManifestKey(v), resp.Manifest); err != nil && !errors.Is(err, artifact.ErrExists) {
		return nil, fmt.Errorf("store the command's manifest: %w", err)
	}
	return mf, nil
}

// promote reads a staged blob, checks it is e's content and puts it where
// the run's blobs live (an existing blob of that hash is the same bytes).
func (c *Client) promote(ctx context.Context, runID, grant string, e workspace.Entry) error {
	b, err := c.Presign.ReadStaged(ctx, runID, grant, e.SHA256, e.Size)
	if err != nil {
		return fmt.Errorf("%w: staged %s: %w", workspace.ErrBlob, e.Path, err)
	}
	sum := sha256.Sum256(b)
	if int64(len(b)) != e.Size || hex.EncodeToString(sum[:]) != e.SHA256 {
		return fmt.Errorf("%w: staged content of %s does not match sha256 %s, size %d", workspace.ErrBlob, e.Path, e.SHA256, e.Size)
	}
	if _, err := c.Artifacts.Put(ctx, workspace.BlobKey(e), b); err != nil && !errors.Is(err, artifact.ErrExists) {
		return fmt.Errorf("store blob of %s: %w", e.Path, err)
	}
	return nil
}
