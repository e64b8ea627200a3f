package compose

import (
	"log/slog"
	"net/http"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/mcpserve"
)

// MountMCP serves Keel's MCP endpoint (mcpserve.Path) beside the API
// handler h, as KEEL_MCP says: the same authentication as the API,
// decisions only when the operator asked for them.
func MountMCP(h http.Handler, auth api.Authenticator, cfg config.Config, version string, log *slog.Logger) http.Handler {
	if cfg.MCP == config.MCPOff {
		return h
	}
	return mcpserve.Mount(h, auth, mcpserve.Options{AllowDecisions: cfg.MCP == config.MCPDecisions, Version: version}, log)
}
