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

// listed is one tool of a server's recorded list: its terms (the hash,
// and the annotations the hash covers) and what Keel made of them under
// the operator's policy when the run recorded them.
type listed struct {
	Name        string               `json:"name"`
	SHA256      string               `json:"sha256"`
	Annotations *mcp.ToolAnnotations `json:"annotations,omitempty"`
	Mode        string               `json:"mode,omitempty"`
	Effect      bool                 `json:"effect,omitempty"`
	Promises    string               `json:"promises,omitempty"`
}

// record is the artifact a run keeps of a server's tool list.
type record struct {
	Server string   `json:"server"`
	Tools  []listed `json:"tools"`
	// Annotated: Tools carry their annotations (a record written before
	// they did is judged from a listing whose hashes match it).
	Annotated bool `json:"annotated,omitempty"`
}

// RecordKey is where a run keeps the tool list of server it first saw.
func RecordKey(runID, server string) artifact.Key {
	return artifact.Key{RunID: runID, CheckpointID: "mcp", Name: server + ".tools.json"}
}

// ErrTermsChanged is the error of a tool whose schema or annotations are
// not the ones its run recorded.
var ErrTermsChanged = errors.New("MCP tool changed its terms during the run")

// listNow lists the server and makes the list a record: each tool's
// hash, annotations and judgement under the operator's policy.
func (c *client) listNow(ctx context.Context) (record, error) {
	tools, err := c.list(ctx)
	if err != nil {
		return record{}, err
	}
	now := record{Server: c.srv.Name, Annotated: true}
	for _, t := range tools {
		h, err := ToolHash(t)
		if err != nil {
			return record{}, err
		}
		j := c.srv.judge(t.Name, t.Annotations)
		now.Tools = append(now.Tools, listed{Name: t.Name, SHA256: h, Annotations: t.Annotations,
			Mode: string(j.Mode), Effect: j.Effect, Promises: j.Contract.String()})
	}
	slices.SortFunc(now.Tools, func(a, b listed) int { return strings.Compare(a.Name, b.Name) })
	return now, nil
}

// judge is ModeFor under s's policy for one tool.
func (s Server) judge(name string, a *mcp.ToolAnnotations) Terms {
	return ModeFor(a, s.Trusted, s.Contract, s.Tools[name])
}

// runRecord is the record runID holds of the server: the one it has, or
// now's, recorded as its own (first writer wins). Without an artifact
// store or a run, it is now's, not recorded.
func (c *client) runRecord(ctx context.Context, arts artifact.Store, runID string, now *record) (record, error) {
	if now == nil {
		if arts != nil && runID != "" {
			if was, ok, err := c.recorded(ctx, arts, runID); err != nil || (ok && was.Annotated) {
				return was, err
			}
		}
		r, err := c.listNow(ctx)
		if err != nil {
			return record{}, err
		}
		now = &r
	}
	if arts == nil || runID == "" {
		return *now, nil
	}
	b, _ := json.Marshal(now)
	if _, err := arts.Put(ctx, RecordKey(runID, c.srv.Name), b); err == nil {
		return *now, nil
	} else if !errors.Is(err, artifact.ErrExists) {
		return record{}, fmt.Errorf("MCP server %q: record its tool list: %w", c.srv.Name, err)
	}
	was, _, err := c.recorded(ctx, arts, runID)
	if err != nil || was.Annotated {
		return was, err
	}
	// Recorded before records held annotations: judge from now's list
	// where its terms are the recorded ones.
	for i, t := range was.Tools {
		if lookup(*now, t.Name) == t.SHA256 {
			was.Tools[i] = now.Tools[slices.IndexFunc(now.Tools, func(x listed) bool { return x.Name == t.Name })]
		}
	}
	was.Annotated = true
	return was, nil
}

// recorded reads the record runID holds of the server; ok is false when
// it holds none.
func (c *client) recorded(ctx context.Context, arts artifact.Store, runID string) (record, bool, error) {
	old, _, err := arts.Get(ctx, RecordKey(runID, c.srv.Name))
	if errors.Is(err, artifact.ErrNotFound) {
		return record{}, false, nil
	}
	if err != nil {
		return record{}, false, fmt.Errorf("MCP server %q: read the run's recorded tool list: %w", c.srv.Name, err)
	}
	var was record
	if err := json.Unmarshal(old, &was); err != nil {
		return record{}, false, fmt.Errorf("MCP server %q: recorded tool list: %w", c.srv.Name, err)
	}
	return was, true, nil
}

// holdTerms lists the server now, records the list for runID if the run
// has none yet, and refuses tool when its terms differ from the
// recorded ones. Without an artifact store (a process that only
// observes), nothing is recorded.
func (c *client) holdTerms(ctx context.Context, arts artifact.Store, runID, toolName string) error {
	now, err := c.listNow(ctx)
	if err != nil {
		return err
	}
	cur := lookup(now, toolName)
	if cur == "" {
		return fmt.Errorf("%w: MCP server %q no longer lists tool %q", ErrTermsChanged, c.srv.Name, toolName)
	}
	was, err := c.runRecord(ctx, arts, runID, &now)
	if err != nil {
		return err
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
