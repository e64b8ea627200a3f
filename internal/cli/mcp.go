package cli

import (
	"context"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keelrun/keel/internal/mcpserve"
)

// mcpCommand is `keel mcp`: Keel as an MCP server on stdin/stdout, for an
// MCP client (Claude Code, an IDE, another agent) to start runs, follow
// them, read their story and send input, through the API this command
// finds as every client command does. Approving, denying and settling
// are offered only with --allow-decisions: the client may be a model.
func mcpCommand() command {
	cmd := command{usage: "[--allow-decisions]", summary: "serve Keel to an MCP client over stdio: start, follow and explain runs, send input"}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("mcp")
		allow := fs.Bool("allow-decisions", false, "offer approve, deny and settle to the MCP client (off: a person decides)")
		_, cl, err := c.connect(fs, args)
		if err != nil {
			return err
		}
		srv := mcpserve.New(cl, mcpserve.Options{AllowDecisions: *allow, Version: "1"})
		t := &mcp.IOTransport{Reader: io.NopCloser(c.stdin), Writer: nopWriteCloser{c.stdout}}
		return srv.Run(ctx, t)
	}
	return cmd
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
