package cmdrunner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"sort"
	"strings"

	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/workspace"
)

// urlStore is the workspace.Artifacts of the runner: Get reads through the
// request's presigned GETs only, Put uploads a blob of runID to the
// staging grant and keeps a manifest in memory (it is returned, the worker
// stores it). Hashes are checked by workspace (ReadManifest, ReadFile),
// never trusted from here.
type urlStore struct {
	hc       *http.Client
	runID    string
	get      map[string]string
	up       Upload
	maxBody  int64
	manifest []byte
	staged   []string
}

var _ workspace.Artifacts = (*urlStore)(nil)

func (u *urlStore) Get(ctx context.Context, k artifact.Key) ([]byte, artifact.Info, error) {
	url, ok := u.get[k.Path()]
	if !ok {
		return nil, artifact.Info{}, fmt.Errorf("%w: %s (no URL for it in the request)", artifact.ErrNotFound, k.Path())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, artifact.Info{}, err
	}
	resp, err := u.hc.Do(req)
	if err != nil {
		return nil, artifact.Info{}, fmt.Errorf("get %s: %w", k.Path(), redact(err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, artifact.Info{}, fmt.Errorf("%w: %s", artifact.ErrNotFound, k.Path())
	case resp.StatusCode/100 != 2:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, artifact.Info{}, fmt.Errorf("get %s: HTTP %d: %s", k.Path(), resp.StatusCode, bytes.TrimSpace(b))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, u.maxBody+1))
	if err != nil {
		return nil, artifact.Info{}, fmt.Errorf("get %s: %w", k.Path(), redact(err))
	}
	if int64(len(b)) > u.maxBody {
		return nil, artifact.Info{}, fmt.Errorf("%w: %s is over %d bytes", artifact.ErrCorrupt, k.Path(), u.maxBody)
	}
	return b, artifact.Info{Key: k, Size: int64(len(b))}, nil
}

// Put keeps the manifest and stages blobs; any other key is refused.
func (u *urlStore) Put(ctx context.Context, k artifact.Key, data []byte) (artifact.Info, error) {
	if k.RunID != u.runID {
		return artifact.Info{}, fmt.Errorf("%w: put %s outside run %s", artifact.ErrInvalid, k.Path(), u.runID)
	}
	if name, ok := strings.CutSuffix(k.Name, ".json"); ok && workspace.ManifestKey(workspace.Version{RunID: k.RunID, SHA256: name}) == k {
		u.manifest = data
		return artifact.Info{Key: k, Size: int64(len(data))}, nil
	}
	if workspace.BlobKey(workspace.Entry{Run: k.RunID, SHA256: k.Name}) != k {
		return artifact.Info{}, fmt.Errorf("%w: %s is neither a blob nor a manifest", artifact.ErrInvalid, k.Path())
	}
	if err := u.post(ctx, u.up.KeyPrefix+k.Name, data); err != nil {
		return artifact.Info{}, fmt.Errorf("stage blob %s: %w", k.Name, err)
	}
	u.staged = append(u.staged, k.Name)
	return artifact.Info{Key: k, Size: int64(len(data))}, nil
}

// post sends one multipart/form-data POST: the grant's fields, the key,
// the file last (S3 ignores fields after it).
func (u *urlStore) post(ctx context.Context, key string, data []byte) error {
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	names := make([]string, 0, len(u.up.Fields))
	for k := range u.up.Fields {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if err := w.WriteField(k, u.up.Fields[k]); err != nil {
			return err
		}
	}
	if err := w.WriteField("key", key); err != nil {
		return err
	}
	fw, err := w.CreateFormFile("file", "blob")
	if err != nil {
		return err
	}
	if _, err := fw.Write(data); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.up.URL, &body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	resp, err := u.hc.Do(req)
	if err != nil {
		return redact(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	return nil
}

// redact drops the URL (its signature) from a transport error, so no
// presigned URL reaches a log or the worker's error.
func redact(err error) error {
	if ue, ok := err.(interface{ Unwrap() error }); ok && strings.Contains(err.Error(), "X-Amz-") {
		return fmt.Errorf("request failed: %w", ue.Unwrap())
	}
	return err
}
