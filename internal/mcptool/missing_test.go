package mcptool_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/mcptool"
)

// TestMissingCommand: a stdio server whose command is not there is
// reported as a command that cannot start, not as a server that "does
// not speak MCP".
func TestMissingCommand(t *testing.T) {
	arts, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, cmd := range map[string]string{
		"not on PATH":  "keel-no-such-mcp-server",
		"no such path": filepath.Join(t.TempDir(), "bin", "server"),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := mcptool.Open(context.Background(), mcptool.Server{Name: "fx", Command: []string{cmd, "--stdio"}}, arts)
			if err == nil || !strings.Contains(err.Error(), `MCP server "fx": cannot start "`+cmd+`"`) || strings.Contains(err.Error(), "does not speak MCP") {
				t.Fatalf("err %v", err)
			}
		})
	}
}
