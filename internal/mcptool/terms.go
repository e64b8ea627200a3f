package mcptool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keelrun/keel/internal/kernel/artifact"
)

// ToolHash is the sha256 of a tool's input schema and annotations, the
// terms a run holds it to. Maps marshal with sorted keys, so the same
// terms hash the same in every process.
func ToolHash(t *mcp.Tool) (string, error) {
	b, err := json.Marshal(struct {
		Schema      any                  `json:"input_schema"`
		Annotations *mcp.ToolAnnotations `json:"annotations"`
	}{t.InputSchema, t.Annotations})
	if err != nil {
		return "", fmt.Errorf("tool %q: schema: %w", t.Name, err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// listed is one tool of a server's recorded list.
type listed struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// record is the artifact a run keeps of a server's tool list.
type record struct {
	Server string   `json:"server"`
	Tools  []listed `json:"tools"`
}

// RecordKey is where a run keeps the tool list of server it first saw.
func RecordKey(runID, server string) artifact.Key {
	return artifact.Key{RunID: runID, CheckpointID: "mcp", Name: server + ".tools.json"}
}

// ErrTermsChanged is the error of a tool whose schema or annotations are
// not the ones its run recorded.
var ErrTermsChanged = errors.New("MCP tool changed its terms during the run")

// holdTerms lists the server now, records the list for runID if the run
// has none yet, and refuses tool when its terms differ from the
// recorded ones. Without an artifact store (a process that only
// observes), nothing is recorded.
func (c *client) holdTerms(ctx context.Context, arts artifact.Store, runID, toolName string) error {
	tools, err := c.list(ctx)
	if err != nil {
		return err
	}
	now := record{Server: c.srv.Name}
	for _, t := range tools {
		h, err := ToolHash(t)
		if err != nil {
			return err
		}
		now.Tools = append(now.Tools, listed{Name: t.Name, SHA256: h})
	}
	slices.SortFunc(now.Tools, func(a, b listed) int { return strings.Compare(a.Name, b.Name) })
	cur := lookup(now, toolName)
	if cur == "" {
		return fmt.Errorf("%w: MCP server %q no longer lists tool %q", ErrTermsChanged, c.srv.Name, toolName)
	}
	if arts == nil || runID == "" {
		return nil
	}
	b, _ := json.Marshal(now)
	key := RecordKey(runID, c.srv.Name)
	if _, err := arts.Put(ctx, key, b); err == nil {
		return nil
	} else if !errors.Is(err, artifact.ErrExists) {
		return fmt.Errorf("MCP server %q: record its tool list: %w", c.srv.Name, err)
	}
	old, _, err := arts.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("MCP server %q: read the run's recorded tool list: %w", c.srv.Name, err)
	}
	var was record
	if err := json.Unmarshal(old, &was); err != nil {
		return fmt.Errorf("MCP server %q: recorded tool list: %w", c.srv.Name, err)
	}
	if prev := lookup(was, toolName); prev != cur {
		return fmt.Errorf("%w: MCP server %q changed the schema or annotations of tool %q since this run first listed it (sha256 %s, now %s): refused",
			ErrTermsChanged, c.srv.Name, toolName, short(prev), short(cur))
	}
	return nil
}

func lookup(r record, name string) string {
	for _, t := range r.Tools {
		if t.Name == name {
			return t.SHA256
		}
	}
	return ""
}

func short(h string) string {
	if h == "" {
		return "(not listed)"
	}
	return h[:min(12, len(h))]
}
