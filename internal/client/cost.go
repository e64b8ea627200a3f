package client

import (
	"context"
	"net/http"

	"github.com/keelrun/keel/internal/observe/cost"
)

// Cost calls GET /v1/runs/{id}/cost: the run's usage and its price from
// the server's table.
func (c *Client) Cost(ctx context.Context, id string) (cost.Report, error) {
	var out cost.Report
	_, err := c.call(ctx, http.MethodGet, runPath(id, "cost"), nil, nil, nil, &out)
	return out, err
}
