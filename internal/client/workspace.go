package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
)

// Workspace lists the workspace version of each of a run's checkpoints
// that has one (GET /v1/runs/{id}/workspace). A run whose agent has no
// workspace answers an empty list.
func (c *Client) Workspace(ctx context.Context, id string) ([]api.WorkspaceVersion, error) {
	var out api.WorkspaceList
	_, err := c.call(ctx, http.MethodGet, runPath(id, "workspace"), nil, nil, nil, &out)
	return out.Versions, err
}

// WorkspaceDir lists a directory of the run's workspace as of a checkpoint
// (GET /v1/runs/{id}/workspace/files; dir "" is the root). A path that
// names a file is an error: use WorkspaceFile.
func (c *Client) WorkspaceDir(ctx context.Context, runID, checkpointID, dir string) (api.WorkspaceDir, error) {
	var out api.WorkspaceDir
	q := url.Values{"checkpoint": {checkpointID}, "path": {dir}}
	_, err := c.call(ctx, http.MethodGet, runPath(runID, "workspace", "files"), q, nil, nil, &out)
	return out, err
}

// WorkspaceFile downloads one file of the run's workspace as of a
// checkpoint, checked against the sha256 the server announces (the
// manifest's). It returns the bytes and that sha256.
func (c *Client) WorkspaceFile(ctx context.Context, runID, checkpointID, file string) ([]byte, string, error) {
	q := url.Values{"checkpoint": {checkpointID}, "path": {file}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url(runPath(runID, "workspace", "files"), q), nil)
	if err != nil {
		return nil, "", fmt.Errorf("client: %w", err)
	}
	c.auth(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("client: workspace file: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", decodeError(resp)
	}
	// A directory answers JSON without a hash: not a file.
	want := resp.Header.Get("X-Content-SHA256")
	if want == "" {
		return nil, "", fmt.Errorf("client: workspace file %q: the server answered no file (a directory or a symlink?)", file)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", fmt.Errorf("client: workspace file: %w", err)
	}
	if got := run.HashBytes(b); got != want {
		return nil, "", fmt.Errorf("%w: got %s, announced %s", ErrHashMismatch, got, want)
	}
	return b, want, nil
}
