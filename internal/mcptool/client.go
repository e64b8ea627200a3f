package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// client is one process's connection to one server: connected at first
// need, again after the connection broke (a disconnect mid-call leaves
// that call's outcome unknown; the next call starts a new session).
type client struct {
	srv Server
	// workspace is the run's tree a sandboxed server of one run works in
	// ("" for the server that lists the tools).
	workspace string

	runsMu sync.Mutex
	runs   map[string]*runServer // a sandboxed server's, by run (runs.go)

	mu      sync.Mutex
	session *mcp.ClientSession

	progMu   sync.Mutex
	progress map[string]func(done, total int64, note string)
	nextTok  uint64

	tokMu  sync.Mutex
	tokens []string // tokens Keel did not configure (OAuth, BearerTokenFrom), sent so far, to mask
}

// sawToken keeps an access token the client sent, for Secrets.
func (c *client) sawToken(tok string) {
	c.tokMu.Lock()
	defer c.tokMu.Unlock()
	if !slices.Contains(c.tokens, tok) {
		c.tokens = append(c.tokens, tok)
	}
}

func (c *client) accessTokens() []string {
	c.tokMu.Lock()
	defer c.tokMu.Unlock()
	return slices.Clone(c.tokens)
}

func newClient(s Server) *client {
	return &client{srv: s, progress: map[string]func(int64, int64, string){}, runs: map[string]*runServer{}}
}

// headerTransport adds the operator's credentials to every request: they
// live here, in the client, and nowhere a model or a record can see.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	bearer  string
	// seen gets the bearer token of each request the SDK authorized
	// (OAuth): it is a credential Keel did not configure, and is masked.
	seen func(string)
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	if h.bearer != "" {
		r.Header.Set("Authorization", "Bearer "+h.bearer)
	} else if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && h.seen != nil {
		h.seen(tok)
	}
	return h.base.RoundTrip(r)
}

func (c *client) transport(ctx context.Context) (mcp.Transport, error) {
	s := c.srv
	if s.URL != "" {
		bearer := s.BearerToken
		if s.BearerTokenFrom != nil {
			tok, err := s.BearerTokenFrom(ctx)
			if err != nil {
				return nil, fmt.Errorf("MCP server %q: BearerTokenFrom: %w", s.Name, err)
			}
			if tok == "" {
				return nil, fmt.Errorf("MCP server %q: BearerTokenFrom gave an empty token", s.Name)
			}
			c.sawToken(tok)
			bearer = tok
		}
		hc := &http.Client{Transport: headerTransport{base: http.DefaultTransport, headers: s.Headers, bearer: bearer, seen: c.sawToken}}
		// No transport-level retries: whether a call may be sent again is
		// the operation protocol's decision, not the transport's.
		t := &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}
		if s.OAuthClientID != "" {
			h, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{Credentials: &oauthex.ClientCredentials{
				ClientID: s.OAuthClientID, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: s.OAuthClientSecret}}})
			if err != nil {
				return nil, fmt.Errorf("mcp server %q: OAuth: %w", s.Name, err)
			}
			t.OAuthHandler = h
		}
		return t, nil
	}
	var cmd *exec.Cmd
	switch {
	case s.Sandboxed && s.Isolate == nil:
		return nil, fmt.Errorf("mcp server %q: it runs in the agent's sandbox, and this worker has none (commands go to KEEL_COMMAND_RUNNER): use an HTTP server, or declare it Unsandboxed", s.Name)
	case s.Sandboxed:
		var err error
		if cmd, err = s.Isolate(s.Command, s.Env, s.Network, c.workspace); err != nil {
			return nil, fmt.Errorf("mcp server %q: %w", s.Name, err)
		}
	default:
		cmd = exec.Command(s.Command[0], s.Command[1:]...)
		cmd.Env = append(os.Environ(), s.Env...)
		cmd.Dir = s.Dir
		// A command that cannot start is not a server that "does not
		// speak MCP": say which, before the SDK hides it.
		if err := startable(cmd, s.Dir); err != nil {
			return nil, fmt.Errorf("MCP server %q: cannot start %q: %w (install it, or fix the server's Command)", s.Name, s.Command[0], err)
		}
	}
	cmd.Stderr = os.Stderr
	return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
}

// startable reports why cmd cannot be started: not found on PATH (exec
// sets cmd.Err), or a path (relative to dir) that is missing or not an
// executable file.
func startable(cmd *exec.Cmd, dir string) error {
	if cmd.Err != nil {
		return cmd.Err
	}
	path := cmd.Path
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case fi.IsDir() || fi.Mode()&0o111 == 0:
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// connect returns the live session, starting one if there is none.
func (c *client) connect(ctx context.Context) (*mcp.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session != nil {
		return c.session, nil
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "keel", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: c.onProgress,
	})
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	tr, err := c.transport(ctx)
	if err != nil {
		return nil, err
	}
	cs, err := cl.Connect(ctx, tr, nil)
	if err != nil {
		why := errNotMCP
		if c.srv.OAuthClientID != "" && strings.Contains(err.Error(), "rejected by transport") {
			why = errOAuth // the SDK's Authorize failed: discovery, or the token request
		}
		return nil, fmt.Errorf("MCP server %q: connect: %w: %w", c.srv.Name, why, err)
	}
	c.session = cs
	return cs, nil
}

// drop forgets cs after a failure that may have broken it; the next call
// connects again.
func (c *client) drop(cs *mcp.ClientSession) {
	c.mu.Lock()
	if c.session == cs {
		c.session = nil
	}
	c.mu.Unlock()
	_ = cs.Close()
}

func (c *client) timeout() time.Duration {
	if c.srv.Timeout > 0 {
		return c.srv.Timeout
	}
	return DefaultTimeout
}

func (c *client) maxTools() int {
	if c.srv.MaxTools > 0 {
		return c.srv.MaxTools
	}
	return DefaultMaxTools
}

// list returns the server's tools, at most MaxTools of them: a server
// that lists more is refused whole (its list cannot be shown to a model).
func (c *client) list(ctx context.Context) ([]*mcp.Tool, error) {
	cs, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	var out []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			c.drop(cs)
			return nil, fmt.Errorf("MCP server %q: list tools: %w", c.srv.Name, err)
		}
		if len(out) == c.maxTools() {
			return nil, fmt.Errorf("MCP server %q lists more than %d tools (MaxTools): refused", c.srv.Name, c.maxTools())
		}
		out = append(out, t)
	}
	return out, nil
}

// call calls one tool with the run's ids in _meta and a progress token
// routed to progress. A transport error drops the session.
func (c *client) call(ctx context.Context, name string, args json.RawMessage, meta map[string]any, progress func(int64, int64, string)) (*mcp.CallToolResult, error) {
	cs, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	if progress != nil {
		// A notification is handled on the SDK's goroutine and may come
		// after the answer: none reaches progress once call returns (the
		// harness records the call's end right after).
		var mu sync.Mutex
		ended := false
		tok := c.track(func(done, total int64, note string) {
			mu.Lock()
			defer mu.Unlock()
			if !ended {
				progress(done, total, note)
			}
		})
		defer func() {
			c.untrack(tok)
			mu.Lock()
			ended = true
			mu.Unlock()
		}()
		meta["progressToken"] = tok
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) {
			c.drop(cs)
		}
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("MCP server %q: %s: no answer within %s: %w", c.srv.Name, name, c.timeout(), err)
		}
		return nil, fmt.Errorf("MCP server %q: %s: %w", c.srv.Name, name, err)
	}
	return res, nil
}

func (c *client) track(f func(int64, int64, string)) string {
	c.progMu.Lock()
	defer c.progMu.Unlock()
	c.nextTok++
	tok := fmt.Sprintf("keel-%d", c.nextTok)
	c.progress[tok] = f
	return tok
}

func (c *client) untrack(tok string) {
	c.progMu.Lock()
	delete(c.progress, tok)
	c.progMu.Unlock()
}

func (c *client) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p := req.Params
	tok, _ := p.ProgressToken.(string)
	c.progMu.Lock()
	f := c.progress[tok]
	c.progMu.Unlock()
	if f != nil {
		f(int64(p.Progress), int64(p.Total), p.Message)
	}
}
