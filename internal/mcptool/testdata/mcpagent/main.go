// Command mcpagent is the Keel program of the MCP tests: one agent, "mcp",
// whose only tools are those of the mcpfixture server, untrusted, with
// set_flag declared as honouring keel/operation_id. Its scripted model
// calls lookup, set_flag, lookup again, delete_item, then delete_record
// (which claims to be read-only and idempotent, and deletes).
//
//	MCPAGENT_URL      the fixture's streamable HTTP endpoint, or
//	MCPAGENT_CMD      the fixture binary, run over stdio
//	MCPAGENT_LOG      the fixture's application log (-log), read by Count
//	MCPAGENT_FLAGS    more fixture flags (stdio), space-separated
//	MCPAGENT_TOKEN    the bearer token of the HTTP endpoint
//	MCPAGENT_OAUTH    CLIENT_ID:SECRET, OAuth client credentials instead
//	MCPAGENT_TOKEN_SECRET  a Secrets Manager secret holding the token instead
//	MCPAGENT_LIAR     1: the model calls only delete_record, then ends
//	MCPAGENT_TRUSTED  1: the server is Trusted
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"

	"github.com/keelrun/keel"
	"github.com/keelrun/keel/awssecret"
)

const script = `{"turns": [
 {"text": "Reading.", "tool_calls": [{"name": "fx_lookup", "args": {"key": "a"}}]},
 {"text": "Setting.", "tool_calls": [{"name": "fx_set_flag", "args": {"name": "ready", "value": "yes"}}]},
 {"text": "Reading again.", "tool_calls": [{"name": "fx_lookup", "args": {"key": "b"}}]},
 {"text": "Deleting.", "tool_calls": [{"name": "fx_delete_item", "args": {"id": "item-7"}}]},
 {"text": "Looking at a record.", "tool_calls": [{"name": "fx_delete_record", "args": {"id": "r-1"}}]}],
 "final": "Done."}`

// liarScript calls the lying delete_record once.
const liarScript = `{"turns": [
 {"text": "Looking.", "tool_calls": [{"name": "fx_delete_record", "args": {"id": "r-1"}}]}],
 "final": "Done."}`

func main() {
	keel.MainFunc(func() ([]keel.Agent, error) {
		log := os.Getenv("MCPAGENT_LOG")
		srv := keel.MCPServer{Name: "fx", URL: os.Getenv("MCPAGENT_URL"), BearerToken: os.Getenv("MCPAGENT_TOKEN"),
			Tools: map[string]keel.MCPTool{"set_flag": {Promises: keel.IdempotentByKey}},
			Count: func(_ context.Context, tool, opID string) (int, error) { return count(log, tool, opID) }}
		if id := os.Getenv("MCPAGENT_TOKEN_SECRET"); id != "" {
			srv.BearerToken, srv.BearerTokenFrom = "", awssecret.From(id)
		}
		if id, secret, ok := strings.Cut(os.Getenv("MCPAGENT_OAUTH"), ":"); ok {
			srv.OAuth = &keel.MCPOAuth{ClientID: id, ClientSecret: secret}
		}
		if c := os.Getenv("MCPAGENT_CMD"); c != "" {
			srv.Command = append([]string{c, "-log", log}, strings.Fields(os.Getenv("MCPAGENT_FLAGS"))...)
		}
		if srv.URL == "" && srv.Command == nil {
			return nil, errors.New("mcpagent: set MCPAGENT_URL or MCPAGENT_CMD")
		}
		srv.Trusted = os.Getenv("MCPAGENT_TRUSTED") == "1"
		sc := script
		if os.Getenv("MCPAGENT_LIAR") == "1" {
			sc = liarScript
		}
		return []keel.Agent{{Name: "mcp", Instructions: "Use the fixture's tools.", Model: keel.ScriptedModel([]byte(sc)),
			MCPServers: []keel.MCPServer{srv}}}, nil
	})
}

// count reads how many times the fixture applied opID with tool (a
// lookup's "read" is its application: an untrusted read-only claim runs
// under the operation protocol too).
func count(path, tool, opID string) (int, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e struct {
			Tool, Kind string
			Operation  string `json:"operation_id"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Tool == tool && e.Operation == opID && (e.Kind == "applied" || e.Kind == "read") {
			n++
		}
	}
	return n, sc.Err()
}
