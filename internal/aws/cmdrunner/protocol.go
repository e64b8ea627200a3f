package cmdrunner

import (
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/workspace"
	"github.com/keelrun/keel/internal/sandbox"
)

// Request is one command for the runner. It carries no credential: every
// object it may read is a presigned GET in Get, and the only place it may
// write is Upload's staging prefix.
type Request struct {
	RunID string `json:"run_id"`
	// Version is the tree the command starts from ("" for an empty tree).
	Version string         `json:"version"`
	Argv    []string       `json:"argv"`
	Policy  sandbox.Policy `json:"policy"`
	// Limits bound the tree after the command, as on the worker.
	Limits workspace.Limits `json:"limits"`
	// Get maps artifact key paths (artifact.Key.Path) to presigned GETs:
	// the version's manifest and every blob it names.
	Get    map[string]string `json:"get"`
	Upload Upload            `json:"upload"`
}

// Upload is a presigned S3 POST (artifact/s3.Upload, repeated here so the
// runner links no S3 client): Fields, then key = KeyPrefix + the blob's
// sha256, then the file.
type Upload struct {
	URL       string            `json:"url"`
	Fields    map[string]string `json:"fields"`
	KeyPrefix string            `json:"key_prefix"`
	MaxBytes  int64             `json:"max_bytes"`
}

// Error kinds of a Response: what the worker turns them into.
const (
	KindBlob     = "blob"     // workspace.ErrBlob: a blob missing or not matching its hash
	KindManifest = "manifest" // workspace.ErrBadManifest
	KindTree     = "tree"     // the tree after the command is over a limit or holds what cannot be stored
	KindSetup    = "setup"    // sandbox.ErrSetup: the command could not be started
	KindRequest  = "request"  // the request itself is malformed
)

// Response is what the command did and the tree it left. A command
// stopped by a limit still has Version and Manifest (its files count, as
// on a worker); an Error means nothing ran, or nothing was recorded.
type Response struct {
	ExitCode    int            `json:"exit_code"`
	Stdout      []byte         `json:"stdout,omitempty"`
	Stderr      []byte         `json:"stderr,omitempty"`
	Truncated   bool           `json:"truncated,omitempty"`
	Killed      bool           `json:"killed,omitempty"`
	Reason      sandbox.Reason `json:"reason,omitempty"`
	Limit       string         `json:"limit,omitempty"` // LimitError.Limit
	DurationMs  int64          `json:"duration_ms"`
	FirstOutMs  int64          `json:"first_output_ms,omitempty"`
	CPUTimeMs   int64          `json:"cpu_time_ms"`
	RestoreMs   int64          `json:"restore_ms"`
	SnapshotMs  int64          `json:"snapshot_ms"`
	BlobsStaged int            `json:"blobs_staged"`

	// Version and Manifest (canonical bytes) are the tree after the
	// command; Staged names the blobs uploaded (sha256), under
	// Upload.KeyPrefix.
	Version  string   `json:"version,omitempty"`
	Manifest []byte   `json:"manifest,omitempty"`
	Staged   []string `json:"staged,omitempty"`

	Error     string `json:"error,omitempty"`
	ErrorKind string `json:"error_kind,omitempty"`
}

// ErrRunner is a failure the runner reported that maps to no kernel
// sentinel (KindRequest, or a kind this worker does not know).
var ErrRunner = errors.New("command runner")

// Err is the response's error as the worker's sentinels: errors.Is holds
// for workspace.ErrBlob, workspace.ErrBadManifest, workspace.ErrTooLarge
// (KindTree) and sandbox.ErrSetup.
func (r Response) Err() error {
	if r.Error == "" {
		return nil
	}
	var base error
	switch r.ErrorKind {
	case KindBlob:
		base = workspace.ErrBlob
	case KindManifest:
		base = workspace.ErrBadManifest
	case KindTree:
		base = workspace.ErrTooLarge
	case KindSetup:
		base = sandbox.ErrSetup
	default:
		base = ErrRunner
	}
	return fmt.Errorf("%w (in the command runner): %s", base, r.Error)
}

// kindOf classifies a runner-side error for Response.ErrorKind.
func kindOf(err error) string {
	switch {
	case errors.Is(err, workspace.ErrBlob):
		return KindBlob
	case errors.Is(err, workspace.ErrBadManifest):
		return KindManifest
	case errors.Is(err, workspace.ErrTooLarge), errors.Is(err, workspace.ErrUnsupported), errors.Is(err, workspace.ErrPathEscapes):
		return KindTree
	case errors.Is(err, sandbox.ErrSetup):
		return KindSetup
	}
	return KindRequest
}
