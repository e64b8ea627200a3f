package devserver_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/keelrun/keel/internal/aws/awsbackend"
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/fixture"
	"github.com/keelrun/keel/internal/fixture/fixturetest"
	"github.com/keelrun/keel/internal/local/devserver"
)

// startDev starts a keel dev on SQLite in a temporary directory. A
// TaskCommand that is never run (no run spills here) gives it its local
// Step Functions endpoint.
func startDev(t *testing.T, mod func(*devserver.Config)) *devserver.Server {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	env := map[string]string{"KEEL_DATA_DIR": dir}
	cfg, err := config.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	rt, err := compose.Open(ctx, cfg.Defaults(), fixturetest.App(fixture.DirPublisher{Dir: filepath.Join(dir, "published")}), compose.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	dc := devserver.Config{DataDir: dir, Addr: "127.0.0.1:0", Runtime: rt, TaskCommand: []string{"/bin/false"}}
	if mod != nil {
		mod(&dc)
	}
	srv, err := devserver.Start(ctx, dc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func sfnRequest(t *testing.T, url, op, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("POST", url+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Target", "AWSStepFunctions."+op)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	return req
}

func sign(t *testing.T, req *http.Request, body, secret string, at time.Time) {
	t.Helper()
	sum := sha256.Sum256([]byte(body))
	err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: "keel-dev", SecretAccessKey: secret},
		req, hex.EncodeToString(sum[:]), "states", "us-east-1", at)
	if err != nil {
		t.Fatal(err)
	}
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestStepFunctionsEndpointIsClosed is finding 1 of issue #18: the API
// port answered Step Functions requests that only named the access key;
// now it serves the documented API only, and the task's own endpoint
// verifies the SigV4 signature.
func TestStepFunctionsEndpointIsClosed(t *testing.T) {
	srv := startDev(t, nil)
	const body = `{"executionArn":"arn:aws:states:local:000000000000:execution:keel-run:x"}`

	t.Run("api port: the README's reproduction", func(t *testing.T) {
		req := sfnRequest(t, srv.URL, "GetExecutionHistory", body)
		req.Header.Set("Authorization", "Credential=keel-dev/")
		code, got := do(t, req)
		// POST / is the API's (the viewer serves GET /): an API error,
		// never Step Functions.
		if (code != http.StatusNotFound && code != http.StatusMethodNotAllowed) || !strings.Contains(got, `"error"`) || strings.Contains(got, "events") {
			t.Errorf("got %d %s, want the API's 404 or 405", code, got)
		}
		// Signed correctly, still not on the API port.
		req = sfnRequest(t, srv.URL, "ListExecutions", `{}`)
		sign(t, req, `{}`, srv.Token, time.Now())
		if code, got := do(t, req); (code != http.StatusNotFound && code != http.StatusMethodNotAllowed) || !strings.Contains(got, `"error"`) {
			t.Errorf("signed request on the API port: %d %s", code, got)
		}
	})
	if srv.SFNURL == "" || srv.SFNURL == srv.URL {
		t.Fatalf("SFNURL %q: want a listener of its own", srv.SFNURL)
	}
	cases := []struct {
		name string
		prep func(*http.Request)
		want string
	}{
		{"unsigned", func(*http.Request) {}, "MissingAuthenticationToken"},
		{"fake credential", func(r *http.Request) { r.Header.Set("Authorization", "Credential=keel-dev/") }, "MissingAuthenticationToken"},
		{"wrong secret", func(r *http.Request) { sign(t, r, body, "not-the-token", time.Now()) }, "InvalidSignature"},
		{"other access key", func(r *http.Request) {
			sum := sha256.Sum256([]byte(body))
			_ = v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: "someone", SecretAccessKey: srv.Token},
				r, hex.EncodeToString(sum[:]), "states", "us-east-1", time.Now())
		}, "UnrecognizedClient"},
		{"stale date", func(r *http.Request) { sign(t, r, body, srv.Token, time.Now().Add(-time.Hour)) }, "InvalidSignature"},
		{"body changed after signing", func(r *http.Request) {
			sign(t, r, body, srv.Token, time.Now())
			other := strings.Replace(body, ":x", ":y", 1)
			r.Body, r.ContentLength = io.NopCloser(strings.NewReader(other)), int64(len(other))
		}, "InvalidSignature"},
		{"signed header changed", func(r *http.Request) {
			sign(t, r, body, srv.Token, time.Now())
			r.Header.Set("X-Amz-Target", "AWSStepFunctions.StopExecution")
		}, "InvalidSignature"},
	}
	for _, tc := range cases {
		t.Run("sfn port: "+tc.name, func(t *testing.T) {
			req := sfnRequest(t, srv.SFNURL, "GetExecutionHistory", body)
			tc.prep(req)
			code, got := do(t, req)
			if code != http.StatusForbidden || !strings.Contains(got, tc.want) {
				t.Errorf("got %d %s, want 403 %s", code, got, tc.want)
			}
		})
	}
	t.Run("sfn port: the task's own client", func(t *testing.T) {
		c, err := awsbackend.LocalSFN(srv.SFNURL, srv.Token)
		if err != nil {
			t.Fatal(err)
		}
		// An unknown token: the signature passed, the executor answered.
		err = c.SendTaskHeartbeat(context.Background(), "no-such-token")
		if err == nil || strings.Contains(err.Error(), "Signature") || strings.Contains(err.Error(), "403") {
			t.Errorf("heartbeat: %v, want the executor's answer for an unknown token", err)
		}
	})
}

// TestNonLoopbackAddr: keel dev refuses to listen beyond loopback unless
// told to.
func TestNonLoopbackAddr(t *testing.T) {
	dir := t.TempDir()
	_, err := devserver.Start(context.Background(), devserver.Config{DataDir: dir, Addr: "0.0.0.0:0", Runtime: &compose.Runtime{}})
	if err == nil || !strings.Contains(err.Error(), "--allow-remote") {
		t.Fatalf("Start on 0.0.0.0: %v, want a refusal naming --allow-remote", err)
	}
}

// TestHTTPLimits is finding 3: an idle connection is closed, and the
// connection cap holds.
func TestHTTPLimits(t *testing.T) {
	srv := startDev(t, func(c *devserver.Config) {
		c.HTTP = devserver.HTTPLimits{ReadHeaderTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond, MaxConns: 3}
	})
	addr := strings.TrimPrefix(srv.URL, "http://")
	closedWithin := func(c net.Conn, d time.Duration) bool {
		_ = c.SetReadDeadline(time.Now().Add(d))
		_, err := io.Copy(io.Discard, c)
		return err == nil // EOF: the server closed it; a timeout is an error
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	t.Run("silent connection", func(t *testing.T) {
		if !closedWithin(dial(), 10*time.Second) {
			t.Error("a connection that never sent a byte is still open")
		}
	})
	t.Run("idle keep-alive connection", func(t *testing.T) {
		c := dial()
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("healthz: %v %v", resp, err)
		}
		if !closedWithin(c, 10*time.Second) {
			t.Error("an idle keep-alive connection is still open")
		}
	})
	t.Run("connection cap", func(t *testing.T) {
		var held []net.Conn
		for range 3 {
			held = append(held, dial()) // silent: open until the header timeout
		}
		time.Sleep(50 * time.Millisecond) // let the server accept them
		extra := dial()
		if _, err := io.WriteString(extra, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		_ = extra.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if n, _ := extra.Read(make([]byte, 1)); n > 0 {
			t.Error("a fourth connection was served while three were open")
		}
		for _, c := range held {
			c.Close()
		}
		_ = extra.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(extra), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("after the others closed: %v %v", resp, err)
		}
	})
}

// TestDevToken: surrounding white space is dropped (it could never
// authenticate), and a short token is refused.
func TestDevToken(t *testing.T) {
	const tok = "abcdefghijklmnopqrstuvwxyz"
	srv := startDev(t, func(c *devserver.Config) { c.Token = "  " + tok + "\n" })
	if srv.Token != tok {
		t.Fatalf("token %q", srv.Token)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/v1/runs", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	if code, body := do(t, req); code != 200 {
		t.Errorf("the trimmed token: %d %s", code, body)
	}
	for _, bad := range []string{"x", "short-token", "abcdefgh ijklmnopq"} {
		ctx := context.Background()
		dir := t.TempDir()
		cfg, err := config.FromEnv(func(k string) string { return map[string]string{"KEEL_DATA_DIR": dir}[k] })
		if err != nil {
			t.Fatal(err)
		}
		rt, err := compose.Open(ctx, cfg.Defaults(), fixturetest.App(fixture.DirPublisher{Dir: dir}), compose.Backends{})
		if err != nil {
			t.Fatal(err)
		}
		if s, err := devserver.Start(ctx, devserver.Config{DataDir: dir, Addr: "127.0.0.1:0", Runtime: rt, Token: bad}); err == nil {
			s.Close()
			t.Errorf("token %q accepted", bad)
		}
	}
}

// TestSecondDevOnOneDatabase: a second keel dev with another data
// directory but the same database file is refused (it would end the
// first one's leases).
func TestSecondDevOnOneDatabase(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "shared.db")
	start := func() (*devserver.Server, error) {
		dir := t.TempDir()
		env := map[string]string{"KEEL_DATA_DIR": dir, "KEEL_STORE": "sqlite:" + db}
		cfg, err := config.FromEnv(func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		rt, err := compose.Open(ctx, cfg.Defaults(), fixturetest.App(fixture.DirPublisher{Dir: dir}), compose.Backends{})
		if err != nil {
			t.Fatal(err)
		}
		return devserver.Start(ctx, devserver.Config{DataDir: dir, Addr: "127.0.0.1:0", Runtime: rt})
	}
	first, err := start()
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if second, err := start(); err == nil {
		second.Close()
		t.Fatal("a second keel dev on the same database file started")
	} else if !strings.Contains(err.Error(), "in use by another keel dev") {
		t.Errorf("refusal: %v", err)
	}
}
