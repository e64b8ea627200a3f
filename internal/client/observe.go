package client

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/observe/explain"
)

// Explain reads a run's story (GET /v1/runs/{id}/explain).
func (c *Client) Explain(ctx context.Context, id string) (explain.Story, error) {
	var out explain.Story
	_, err := c.call(ctx, http.MethodGet, runPath(id, "explain"), nil, nil, nil, &out)
	return out, err
}

// RunVersion reads what the version check compares a run against: its
// records version, that version's stored definition and its open records
// (GET /v1/runs/{id}/version). upgrade-check --api decides on it.
func (c *Client) RunVersion(ctx context.Context, id string) (api.RunVersion, error) {
	var out api.RunVersion
	_, err := c.call(ctx, http.MethodGet, runPath(id, "version"), nil, nil, nil, &out)
	return out, err
}

// Deployment reads the deployment's facts and the ten answers of keel
// doctor (GET /v1/deployment).
func (c *Client) Deployment(ctx context.Context) (api.DeploymentReport, error) {
	var out api.DeploymentReport
	_, err := c.call(ctx, http.MethodGet, "/v1/deployment", nil, nil, nil, &out)
	return out, err
}

// Bundle downloads a run's debug bundle (GET /v1/runs/{id}/bundle): the
// tar.gz bytes, checked against the announced sha256, and the file name
// the server suggests.
func (c *Client) Bundle(ctx context.Context, id string) ([]byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url(runPath(id, "bundle"), nil), nil)
	if err != nil {
		return nil, "", fmt.Errorf("client: %w", err)
	}
	c.auth(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("client: bundle: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", decodeError(resp)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", fmt.Errorf("client: bundle: %w", err)
	}
	if got, want := run.HashBytes(b), resp.Header.Get("X-Content-SHA256"); want == "" || got != want {
		return nil, "", fmt.Errorf("%w: got %s, announced %q", ErrHashMismatch, got, want)
	}
	name := ""
	if _, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err == nil {
		name = params["filename"]
	}
	return b, name, nil
}
