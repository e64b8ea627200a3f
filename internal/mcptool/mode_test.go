package mcptool_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/mcptool"
)

// TestModeFor is the table of the package doc, row by row.
func TestModeFor(t *testing.T) {
	no := false
	idem := ops.Contract{Idempotent: true}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	ih := &mcp.ToolAnnotations{IdempotentHint: true}
	additive := &mcp.ToolAnnotations{DestructiveHint: &no}
	read := func(m run.Mode) mcptool.Terms { return mcptool.Terms{Mode: m} }
	effect := func(c ops.Contract) mcptool.Terms {
		return mcptool.Terms{Mode: run.ModeMutating, Effect: true, Contract: c}
	}
	cases := []struct {
		name    string
		a       *mcp.ToolAnnotations
		trusted bool
		server  ops.Contract
		o       mcptool.Override
		want    mcptool.Terms
	}{
		{"untrusted readOnlyHint", ro, false, ops.Contract{}, mcptool.Override{}, mcptool.Terms{Mode: run.ModeConfirmOnce, Effect: true}},
		{"untrusted readOnlyHint, server honours the operation id", ro, false, idem, mcptool.Override{}, mcptool.Terms{Mode: run.ModeConfirmOnce, Effect: true, Contract: idem}},
		{"untrusted readOnlyHint and idempotentHint", &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}, false, ops.Contract{}, mcptool.Override{}, mcptool.Terms{Mode: run.ModeConfirmOnce, Effect: true}},
		{"untrusted readOnlyHint, operator: read", ro, false, ops.Contract{}, mcptool.Override{Mode: run.ModeConfirmOnce}, read(run.ModeConfirmOnce)},
		{"trusted readOnlyHint", ro, true, ops.Contract{}, mcptool.Override{}, read(run.ModeSafeReadonly)},
		{"untrusted idempotentHint", ih, false, ops.Contract{}, mcptool.Override{}, effect(ops.Contract{})},
		{"trusted idempotentHint", ih, true, ops.Contract{}, mcptool.Override{}, effect(idem)},
		{"untrusted additive", additive, false, ops.Contract{}, mcptool.Override{}, effect(ops.Contract{})},
		{"no annotations", nil, false, ops.Contract{}, mcptool.Override{}, effect(ops.Contract{})},
		{"no annotations, trusted", nil, true, ops.Contract{}, mcptool.Override{}, effect(ops.Contract{})},
		{"server honours the operation id", nil, false, idem, mcptool.Override{}, effect(idem)},
		{"tool honours the operation id", nil, false, ops.Contract{}, mcptool.Override{Contract: idem}, effect(idem)},
		{"operator: read-only", nil, false, ops.Contract{}, mcptool.Override{Mode: run.ModeSafeReadonly}, read(run.ModeSafeReadonly)},
		{"operator: effect over a read-only claim", ro, true, ops.Contract{}, mcptool.Override{Mode: run.ModeMutating}, effect(ops.Contract{})},
		{"operator: effect confirmed once", nil, false, ops.Contract{}, mcptool.Override{Mode: run.ModeMutating, ConfirmOnce: true},
			mcptool.Terms{Mode: run.ModeConfirmOnce, Effect: true}},
	}
	for _, c := range cases {
		if got := mcptool.ModeFor(c.a, c.trusted, c.server, c.o); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestServerCheck: a bad configuration is an error naming the field.
func TestServerCheck(t *testing.T) {
	cases := []struct {
		s    mcptool.Server
		want string
	}{
		{mcptool.Server{Name: "a b", URL: "http://x"}, `MCP server name "a b"`},
		{mcptool.Server{Name: "s"}, "set exactly one of URL (streamable HTTP) and Command (stdio)"},
		{mcptool.Server{Name: "s", URL: "http://x", Command: []string{"x"}}, "set exactly one of URL"},
		{mcptool.Server{Name: "s", URL: "ftp://x"}, `URL "ftp://x": want an http:// or https:// endpoint`},
		{mcptool.Server{Name: "s", URL: "https://user:hunter2@x/mcp"}, "URL: put the credential in BearerToken or Headers"},
		{mcptool.Server{Name: "s", URL: "http://x", Contract: ops.Contract{Lookup: true}}, "Promises: an MCP server cannot be looked up"},
		{mcptool.Server{Name: "s", Command: []string{"x"}, BearerToken: "t"}, "BearerToken and Headers are for an HTTP server"},
		{mcptool.Server{Name: "s", URL: "http://x", Env: []string{"A=1"}}, "Env and Dir are for a stdio server"},
		{mcptool.Server{Name: "s", URL: "http://x", Timeout: -1}, "must not be negative"},
		{mcptool.Server{Name: "s", URL: "http://x", Tools: map[string]mcptool.Override{"t": {Mode: "sometimes"}}}, `Tools["t"].Mode "sometimes"`},
		{mcptool.Server{Name: "s", URL: "http://x", Tools: map[string]mcptool.Override{"t": {ConfirmOnce: true}}}, `Tools["t"]: ConfirmOnce is for an effect`},
		{mcptool.Server{Name: "s", URL: "http://x", OAuthClientID: "c"}, "OAuth needs both a client id and a client secret"},
		{mcptool.Server{Name: "s", Command: []string{"x"}, OAuthClientID: "c", OAuthClientSecret: "s"}, "OAuth is for an HTTP server (URL)"},
		{mcptool.Server{Name: "s", URL: "http://x", BearerToken: "t", OAuthClientID: "c", OAuthClientSecret: "s"}, "OAuth is for an HTTP server (URL), instead of BearerToken"},
		{mcptool.Server{Name: "s", Command: []string{"x"}, Sandboxed: true, Dir: "/srv"}, "Dir: a stdio server in the agent's sandbox"},
		{mcptool.Server{Name: "s", URL: "http://x", BearerToken: "t", BearerTokenFrom: func(context.Context) (string, error) { return "t", nil }}, "set at most one of BearerToken and BearerTokenFrom"},
		{mcptool.Server{Name: "s", Command: []string{"x"}, BearerTokenFrom: func(context.Context) (string, error) { return "t", nil }}, "BearerTokenFrom is for an HTTP server (URL)"},
		{mcptool.Server{Name: "s", Command: []string{"x"}, Network: true}, "Network is for a stdio server in the agent's sandbox"},
	}
	for _, c := range cases {
		err := c.s.Check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.s, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the error shows the URL's password: %v", err)
		}
	}
	if err := (mcptool.Server{Name: "s", URL: "https://x/mcp"}).Check(); err != nil {
		t.Errorf("a good server: %v", err)
	}
}
