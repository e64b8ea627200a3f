package mcptool

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keelrun/keel/internal/agentdef"
	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
)

// Server is one MCP server an agent uses (see keel.MCPServer for the
// public contract of each field).
type Server struct {
	Name    string
	URL     string   // streamable HTTP endpoint
	Command []string // stdio: the program and its arguments
	Env     []string // added to the child's environment (stdio)
	Dir     string   // the child's working directory (stdio, not isolated)
	// Sandboxed: a stdio server runs in the agent's sandbox, through
	// Isolate (sandbox.Sandbox.ServerCommand, set when the worker builds
	// the agent): only Env of the environment, no file of the worker's,
	// and network only with Network. One server lists the tools when the
	// worker builds the agent; each run's calls then go to a server of
	// the run's own, started with the run's workspace (see runs.go).
	Sandboxed bool
	Network   bool
	Isolate   func(argv, env []string, network bool, workspace string) (*exec.Cmd, error)

	BearerToken string
	// BearerTokenFrom, instead of BearerToken, gives the token each time
	// the client connects (a secret store read again after a rotation).
	BearerTokenFrom func(ctx context.Context) (string, error)
	Headers         map[string]string
	// OAuthClientID and OAuthClientSecret authenticate to a URL server
	// with the OAuth client credentials grant, its authorization server
	// found from the server's metadata (the MCP SDK's extauth handler).
	OAuthClientID, OAuthClientSecret string

	Trusted  bool
	Contract ops.Contract // how the server deduplicates, for all its effects
	Tools    map[string]Override
	// Only, when not empty, exposes only these tools of the server.
	Only []string
	// Prefix is put before each tool's name; "" means Name+"_".
	Prefix string

	Timeout        time.Duration // per call; 0 means DefaultTimeout
	MaxTools       int           // 0 means DefaultMaxTools
	MaxResultBytes int           // 0 means DefaultMaxResultBytes
	// Count, for crashtest only, says how many times the server applied
	// an operation id of a tool (the server's own name).
	Count func(ctx context.Context, tool, operationID string) (int, error)
}

// Override is the operator's word on one tool; it wins over annotations.
type Override struct {
	// Mode is "" (by the rule), safe_readonly, confirm_once (a read a
	// person allows once per session), or mutating.
	Mode run.Mode
	// Effect with ConfirmOnce: an effect a person allows once per
	// session, not per call. Only with Mode mutating.
	ConfirmOnce bool
	// Contract adds to the server's.
	Contract ops.Contract
}

// Defaults.
const (
	DefaultTimeout        = 2 * time.Minute
	DefaultMaxTools       = 256
	DefaultMaxResultBytes = 1 << 20
	// MetaOperationID is the _meta key of the operation id Keel sends on
	// every call of an effect (and every re-send of it).
	MetaOperationID = "keel/operation_id"
	// MetaRunID and MetaCallID name the run and the call on every call.
	MetaRunID  = "keel/run_id"
	MetaCallID = "keel/call_id"
)

// Check reports what is wrong with s, naming the field.
func (s Server) Check() error {
	if err := agentdef.CheckName("MCP server", s.Name); err != nil {
		return err
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("MCP server %q: %s", s.Name, fmt.Sprintf(format, a...))
	}
	switch {
	case (s.URL == "") == (len(s.Command) == 0):
		return fail("set exactly one of URL (streamable HTTP) and Command (stdio)")
	case s.Contract.Lookup:
		return fail("Promises: an MCP server cannot be looked up; LookupByKey is not for MCP")
	case s.Timeout < 0 || s.MaxTools < 0 || s.MaxResultBytes < 0:
		return fail("Timeout, MaxTools and MaxResultBytes must not be negative")
	case s.URL != "" && (len(s.Env) > 0 || s.Dir != ""):
		return fail("Env and Dir are for a stdio server (Command), not a URL")
	case s.Sandboxed && s.Dir != "":
		return fail("Dir: a stdio server in the agent's sandbox sees no directory of this machine but its program's; drop Dir, or run it outside the sandbox (Unsandboxed)")
	case s.Network && (!s.Sandboxed || s.URL != ""):
		return fail("Network is for a stdio server in the agent's sandbox (an agent with Workspace.Commands); outside one a server has the worker's network anyway")
	case (s.OAuthClientID == "") != (s.OAuthClientSecret == ""):
		return fail("OAuth needs both a client id and a client secret")
	case s.BearerToken != "" && s.BearerTokenFrom != nil:
		return fail("set at most one of BearerToken and BearerTokenFrom")
	case s.BearerTokenFrom != nil && (s.URL == "" || s.OAuthClientID != ""):
		return fail("BearerTokenFrom is for an HTTP server (URL), without OAuth")
	case s.OAuthClientID != "" && (s.URL == "" || s.BearerToken != ""):
		return fail("OAuth is for an HTTP server (URL), instead of BearerToken")
	case len(s.Command) > 0 && (s.BearerToken != "" || len(s.Headers) > 0):
		return fail("BearerToken and Headers are for an HTTP server (URL); give a stdio server its credentials in Env")
	}
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fail("URL %q: want an http:// or https:// endpoint", redactURL(s.URL))
		}
		if u.User != nil {
			return fail("URL: put the credential in BearerToken or Headers, not in the URL")
		}
	}
	for name, o := range s.Tools {
		switch {
		case o.Mode != "" && !o.Mode.Valid():
			return fail("Tools[%q].Mode %q: want safe_readonly, confirm_once or mutating", name, o.Mode)
		case o.Contract.Lookup:
			return fail("Tools[%q].Promises: LookupByKey is not for MCP", name)
		case o.ConfirmOnce && o.Mode != run.ModeMutating:
			return fail("Tools[%q]: ConfirmOnce is for an effect (Mode mutating)", name)
		}
	}
	return nil
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}

// Terms is what Keel makes of one tool: its mode, whether it is an
// effect, and what its destination promises.
type Terms struct {
	Mode     run.Mode
	Effect   bool
	Contract ops.Contract
}

// ModeFor applies the rule of the package doc to one tool's annotations
// (nil: none given).
func ModeFor(a *mcp.ToolAnnotations, trusted bool, server ops.Contract, o Override) Terms {
	t := Terms{Mode: run.ModeMutating, Effect: true, Contract: server}
	switch {
	case a != nil && a.ReadOnlyHint && trusted:
		t = Terms{Mode: run.ModeSafeReadonly}
	case a != nil && a.ReadOnlyHint:
		// A read-only claim Keel does not trust: asked once per session,
		// and still an effect, so a call whose outcome a crash lost is
		// never sent again unless the operator declared the server or
		// tool idempotent.
		t.Mode = run.ModeConfirmOnce
	case a != nil && a.IdempotentHint && trusted:
		t.Contract.Idempotent = true
	}
	switch o.Mode {
	case run.ModeSafeReadonly, run.ModeConfirmOnce:
		t = Terms{Mode: o.Mode}
	case run.ModeMutating:
		t = Terms{Mode: run.ModeMutating, Effect: true, Contract: server}
		if o.ConfirmOnce {
			t.Mode = run.ModeConfirmOnce
		}
	}
	if t.Effect {
		t.Contract.Idempotent = t.Contract.Idempotent || o.Contract.Idempotent
	}
	return t
}

// errNotMCP wraps errors of a server that does not speak the protocol.
var errNotMCP = errors.New("the server does not speak MCP")

// errOAuth wraps errors of an OAuth client credentials grant that failed.
var errOAuth = errors.New("OAuth authorization failed (check the client id and secret, and the server's authorization metadata)")
