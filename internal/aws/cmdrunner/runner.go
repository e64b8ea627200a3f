package cmdrunner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/keelrun/keel/internal/kernel/workspace"
	"github.com/keelrun/keel/internal/sandbox"
)

// Runner serves Requests: one at a time, as Lambda gives an execution
// environment one invocation at a time.
type Runner struct {
	// Root is wiped before and after every command; the tree is
	// Root/workspace. It must be a directory of its own (default
	// /tmp/keel-command).
	Root string
	// Sandbox runs the command: a bare one (sandbox.Config.Bare) whose
	// limiter is this binary (PrlimitCommand).
	Sandbox *sandbox.Sandbox
	// HTTP fetches and uploads through the presigned URLs.
	HTTP *http.Client
}

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// Handle materializes the request's tree (every blob checked against the
// manifest, the manifest against its version), runs the command in it
// with an empty environment under the policy's limits, stages the blobs
// the command created and answers with the result and the new manifest.
// Failures are in the Response (Error, ErrorKind), never a Lambda function
// error: the worker maps them to its own sentinels.
func (r *Runner) Handle(ctx context.Context, req Request) (Response, error) {
	resp, err := r.handle(ctx, req)
	if err != nil {
		resp.Error, resp.ErrorKind = err.Error(), kindOf(err)
	}
	return resp, nil
}

func (r *Runner) handle(ctx context.Context, req Request) (Response, error) {
	if err := check(req); err != nil {
		return Response{}, err
	}
	if err := r.wipe(); err != nil {
		return Response{}, err
	}
	defer func() { _ = r.wipe() }()
	dir := filepath.Join(r.Root, "workspace")
	lim := req.Limits
	if lim.MaxFileBytes <= 0 {
		lim.MaxFileBytes = workspace.DefaultLimits.MaxFileBytes
	}
	store := &urlStore{hc: r.HTTP, runID: req.RunID, get: req.Get, up: req.Upload, maxBody: max(lim.MaxFileBytes, 64<<20)}
	ver := workspace.NewVersioner(store, req.Limits)
	var resp Response
	t0 := time.Now()
	prev, err := r.materialize(ctx, ver, req.Version, dir)
	if err != nil {
		return Response{}, err
	}
	resp.RestoreMs = time.Since(t0).Milliseconds()
	res, runErr := r.Sandbox.Run(ctx, dir, req.Argv, req.Policy)
	var le *sandbox.LimitError
	if runErr != nil && !errors.As(runErr, &le) {
		return Response{}, runErr
	}
	resp.ExitCode, resp.Stdout, resp.Stderr, resp.Truncated, resp.Killed, resp.Reason =
		res.ExitCode, res.Stdout, res.Stderr, res.Truncated, res.Killed, res.Reason
	resp.DurationMs, resp.FirstOutMs, resp.CPUTimeMs = res.Duration.Milliseconds(), res.FirstOutput.Milliseconds(), res.CPUTime.Milliseconds()
	if le != nil {
		resp.Limit = le.Limit
	}
	t1 := time.Now()
	snap, err := ver.Snapshot(ctx, req.RunID, dir, prev)
	if err != nil {
		return resp, err
	}
	resp.SnapshotMs = time.Since(t1).Milliseconds()
	resp.Version, resp.Manifest, resp.Staged, resp.BlobsStaged = snap.Version.String(), store.manifest, store.staged, snap.BlobsPut
	return resp, nil
}

func check(req Request) error {
	switch {
	case !runIDPattern.MatchString(req.RunID):
		return fmt.Errorf("request: run_id %q", req.RunID)
	case len(req.Argv) == 0 || req.Argv[0] == "":
		return errors.New("request: argv is empty")
	case req.Policy.Network():
		return fmt.Errorf("%w: policy.AllowHosts: the command runner runs commands with network off only", sandbox.ErrSetup)
	case req.Upload.URL == "" || req.Upload.KeyPrefix == "":
		return errors.New("request: upload grant missing")
	}
	return nil
}

// materialize restores version into dir (an empty tree for ""), returning
// its manifest.
func (r *Runner) materialize(ctx context.Context, ver *workspace.Versioner, version, dir string) (*workspace.Manifest, error) {
	if version == "" {
		return nil, os.Mkdir(dir, 0o755)
	}
	v, err := workspace.ParseVersion(version)
	if err != nil {
		return nil, err
	}
	return ver.Restore(ctx, v, dir)
}

// wipe empties Root, first making every directory the command may have
// locked (chmod 0) writable again.
func (r *Runner) wipe() error {
	_ = filepath.WalkDir(r.Root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(r.Root); err != nil {
		return fmt.Errorf("%w: wipe %s: %w", sandbox.ErrSetup, r.Root, err)
	}
	if err := os.Mkdir(r.Root, 0o711); err != nil {
		return fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
	}
	return os.Chmod(r.Root, 0o711) // the umask; the command's uid must reach the tree
}
