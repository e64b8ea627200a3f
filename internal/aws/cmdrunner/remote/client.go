package remote

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/keelrun/keel/internal/aws/cmdrunner"
	keels3 "github.com/keelrun/keel/internal/backend/artifact/s3"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/workspace"
	"github.com/keelrun/keel/internal/runspace"
	"github.com/keelrun/keel/internal/sandbox"
)

// Presigner is what the client needs of artifact/s3.Presigner.
type Presigner interface {
	GetURL(ctx context.Context, k artifact.Key, ttl time.Duration) (string, error)
	Upload(ctx context.Context, runID, grant string, maxBytes int64, ttl time.Duration) (keels3.Upload, error)
	ReadStaged(ctx context.Context, runID, grant, name string, max int64) ([]byte, error)
}

// Invoker invokes the runner function synchronously with a tenant id
// (Lambda tenant isolation: an execution environment serves one tenant).
type Invoker interface {
	Invoke(ctx context.Context, function, tenant string, payload []byte) ([]byte, error)
}

// MaxRequestBytes is Lambda's bound on a synchronous invocation's payload
// (6 MB); a tree whose URLs do not fit is refused before invoking.
const MaxRequestBytes = 6 << 20

// ErrNetworkOnAWS: a policy with AllowHosts asks for what the runner does
// not give (it has no route out but the bucket).
var ErrNetworkOnAWS = errors.New("Workspace.Commands.AllowHosts: commands on AWS run in the command runner function, which has no route out but the run bucket's endpoint; a command with network is not supported there (leave AllowHosts empty)")

// Client runs commands in the runner function for the worker: the
// runspace.Remote of an AWS deployment. The worker's role makes the URLs
// (it reads the run's artifacts and writes the staging prefix); the
// runner's holds no data permission.
type Client struct {
	Function  string
	Invoke    Invoker
	Presign   Presigner
	Artifacts workspace.Artifacts
}

var _ runspace.Remote = (*Client)(nil)

// Exec implements runspace.Remote.
func (c *Client) Exec(ctx context.Context, cmd runspace.RemoteCommand) (runspace.RemoteResult, error) {
	if cmd.Policy.Network() {
		return runspace.RemoteResult{}, fmt.Errorf("%w: %w", sandbox.ErrSetup, ErrNetworkOnAWS)
	}
	p := cmd.Policy.WithDefaults()
	ttl := p.WallTime + 5*time.Minute
	grant, err := newGrant()
	if err != nil {
		return runspace.RemoteResult{}, err
	}
	req, err := c.request(ctx, cmd, p, grant, ttl)
	if err != nil {
		return runspace.RemoteResult{}, err
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return runspace.RemoteResult{}, err
	}
	if len(payload) > MaxRequestBytes {
		return runspace.RemoteResult{}, fmt.Errorf("%w: the workspace's %d files make a %d-byte request, over Lambda's %d", sandbox.ErrSetup, len(req.Get)-1, len(payload), MaxRequestBytes)
	}
	out, err := c.Invoke.Invoke(ctx, c.Function, cmd.RunID, payload)
	if err != nil {
		return runspace.RemoteResult{}, fmt.Errorf("%w: invoke %s: %w", sandbox.ErrSetup, c.Function, err)
	}
	var resp cmdrunner.Response
	if err := json.Unmarshal(out, &resp); err != nil {
		return runspace.RemoteResult{}, fmt.Errorf("command runner answer: %w", err)
	}
	if err := resp.Err(); err != nil {
		return runspace.RemoteResult{}, err
	}
	rr := runspace.RemoteResult{Result: result(resp)}
	if rr.Manifest, err = c.accept(ctx, cmd, grant, resp); err != nil {
		return runspace.RemoteResult{}, err
	}
	rr.Version = resp.Version
	if resp.Reason != "" {
		return rr, &sandbox.LimitError{Reason: resp.Reason, Limit: resp.Limit, Killed: resp.Killed}
	}
	return rr, nil
}

// request presigns a GET for the manifest and every blob, and the upload.
func (c *Client) request(ctx context.Context, cmd runspace.RemoteCommand, p sandbox.Policy, grant string, ttl time.Duration) (cmdrunner.Request, error) {
	req := cmdrunner.Request{RunID: cmd.RunID, Version: cmd.Version, Argv: cmd.Argv, Policy: p, Limits: cmd.Limits, Get: map[string]string{}}
	keys := []artifact.Key{}
	if cmd.Version != "" {
		v, err := workspace.ParseVersion(cmd.Version)
		if err != nil {
			return cmdrunner.Request{}, err
		}
		keys = append(keys, workspace.ManifestKey(v))
		for _, e := range cmd.Manifest.Entries {
			if e.Type == workspace.TypeFile {
				keys = append(keys, workspace.BlobKey(e))
			}
		}
	}
	for _, k := range keys {
		if _, done := req.Get[k.Path()]; done {
			continue
		}
		u, err := c.Presign.GetURL(ctx, k, ttl)
		if err != nil {
			return cmdrunner.Request{}, err
		}
		req.Get[k.Path()] = u
	}
	up, err := c.Presign.Upload(ctx, cmd.RunID, grant, maxFile(cmd.Limits), ttl)
	if err != nil {
		return cmdrunner.Request{}, err
	}
	req.Upload = cmdrunner.Upload{URL: up.URL, Fields: up.Fields, KeyPrefix: up.KeyPrefix, MaxBytes: up.MaxBytes}
	return req, nil
}

func result(r cmdrunner.Response) sandbox.Result {
	return sandbox.Result{ExitCode: r.ExitCode, Stdout: r.Stdout, Stderr: r.Stderr, Truncated: r.Truncated, Killed: r.Killed, Reason: r.Reason,
		Duration: time.Duration(r.DurationMs) * time.Millisecond, FirstOutput: time.Duration(r.FirstOutMs) * time.Millisecond,
		CPUTime: time.Duration(r.CPUTimeMs) * time.Millisecond}
}

func maxFile(l workspace.Limits) int64 {
	if l.MaxFileBytes > 0 {
		return l.MaxFileBytes
	}
	return workspace.DefaultLimits.MaxFileBytes
}

func newGrant() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}
