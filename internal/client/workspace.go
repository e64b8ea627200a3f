package client

import (
	"context"
	"net/http"

	"github.com/keelrun/keel/internal/api"
)

// Workspace lists the workspace version of each of a run's checkpoints
// that has one (GET /v1/runs/{id}/workspace). A run whose agent has no
// workspace answers an empty list.
func (c *Client) Workspace(ctx context.Context, id string) ([]api.WorkspaceVersion, error) {
	var out api.WorkspaceList
	_, err := c.call(ctx, http.MethodGet, runPath(id, "workspace"), nil, nil, nil, &out)
	return out.Versions, err
}
