package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/keelrun/keel"
)

// DirPublisher publishes a report as {dir}/{operation_id}.md. Creation is
// exclusive (a hard link of a fully written temp file), so a repeat with
// the same operation id never makes a second copy, and Find is a stat.
type DirPublisher struct{ Dir string }

// Name implements Publisher.
func (d DirPublisher) Name() string { return "dir:" + d.Dir }

// Promises implements Publisher: creation is exclusive by operation id,
// and a publication can be looked up by it.
func (d DirPublisher) Promises() keel.Promise { return keel.IdempotentByKey | keel.LookupByKey }

// Publish implements Publisher.
func (d DirPublisher) Publish(ctx context.Context, opID, sha string, content []byte) (keel.Outcome, error) {
	name, err := cleanName(opID)
	if err != nil {
		return keel.Outcome{}, keel.Reject("%s", err.Error())
	}
	if err := os.MkdirAll(d.Dir, 0o755); err != nil {
		return keel.Outcome{}, err
	}
	final := filepath.Join(d.Dir, name+".md")
	tmp, err := os.CreateTemp(d.Dir, ".tmp-*")
	if err != nil {
		return keel.Outcome{}, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return keel.Outcome{}, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return keel.Outcome{}, err
	}
	if err := tmp.Close(); err != nil {
		return keel.Outcome{}, err
	}
	if err := os.Link(tmp.Name(), final); err != nil && !errors.Is(err, os.ErrExist) {
		return keel.Outcome{}, err
	}
	if err := syncDir(d.Dir); err != nil {
		return keel.Outcome{}, err
	}
	out, found, err := d.Find(ctx, opID)
	if err == nil && !found {
		err = fmt.Errorf("publication %s vanished after publishing", opID)
	}
	return out, err
}

// Find implements Publisher.
func (d DirPublisher) Find(_ context.Context, opID string) (keel.Outcome, bool, error) {
	name, err := cleanName(opID)
	if err != nil {
		return keel.Outcome{}, false, err
	}
	b, err := os.ReadFile(filepath.Join(d.Dir, name+".md"))
	if errors.Is(err, os.ErrNotExist) {
		return keel.Outcome{}, false, nil
	}
	if err != nil {
		return keel.Outcome{}, false, err
	}
	res, _ := json.Marshal(map[string]any{"path": filepath.Join(d.Dir, name+".md"), "sha256": sha256Hex(b)})
	return keel.Outcome{ExternalID: name, Result: res}, true, nil
}

// Count returns how many publications the directory holds.
func (d DirPublisher) Count() (int, error) {
	m, err := filepath.Glob(filepath.Join(d.Dir, "*.md"))
	return len(m), err
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// HTTPPublisher publishes to a PublicationServer (or any endpoint with the
// same contract): POST {base}/publications with an Idempotency-Key header,
// and GET {base}/publications/{operation_id} to look one up.
type HTTPPublisher struct {
	Base   string
	Client *http.Client
	// NoLookup and NotIdempotent declare a weaker destination (the crash
	// suite's "none" mode): then an unknown outcome needs a person.
	NoLookup, NotIdempotent bool
}

// Name implements Publisher.
func (h HTTPPublisher) Name() string { return "http:" + h.Base }

// Promises implements Publisher.
func (h HTTPPublisher) Promises() keel.Promise {
	var p keel.Promise
	if !h.NotIdempotent {
		p |= keel.IdempotentByKey
	}
	if !h.NoLookup {
		p |= keel.LookupByKey
	}
	return p
}

func (h HTTPPublisher) client() *http.Client {
	if h.Client != nil {
		return h.Client
	}
	return &http.Client{Timeout: 30 * time.Second}
}

// Publish implements Publisher.
func (h HTTPPublisher) Publish(ctx context.Context, opID, sha string, content []byte) (keel.Outcome, error) {
	body, _ := json.Marshal(map[string]string{"operation_id": opID, "sha256": sha, "content": string(content)})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(h.Base, "/")+"/publications", bytes.NewReader(body))
	if err != nil {
		return keel.Outcome{}, keel.Reject("%s", err.Error())
	}
	req.Header.Set("Content-Type", "application/json")
	if !h.NotIdempotent {
		req.Header.Set("Idempotency-Key", opID)
	}
	resp, err := h.client().Do(req)
	if err != nil {
		return keel.Outcome{}, fmt.Errorf("publish %s: %w", opID, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return keel.Outcome{}, fmt.Errorf("publish %s: reading response: %w", opID, err)
	}
	switch {
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated:
		var p Publication
		if err := json.Unmarshal(b, &p); err != nil {
			return keel.Outcome{}, fmt.Errorf("publish %s: response: %w", opID, err)
		}
		return keel.Outcome{ExternalID: p.ID, Result: b}, nil
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusRequestTimeout:
		return keel.Outcome{}, keel.Reject("status %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	default:
		return keel.Outcome{}, fmt.Errorf("publish %s: status %d", opID, resp.StatusCode)
	}
}

// Find implements Publisher.
func (h HTTPPublisher) Find(ctx context.Context, opID string) (keel.Outcome, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(h.Base, "/")+"/publications/"+url.PathEscape(opID), nil)
	if err != nil {
		return keel.Outcome{}, false, err
	}
	resp, err := h.client().Do(req)
	if err != nil {
		return keel.Outcome{}, false, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch resp.StatusCode {
	case http.StatusOK:
		var p Publication
		if err := json.Unmarshal(b, &p); err != nil {
			return keel.Outcome{}, false, err
		}
		return keel.Outcome{ExternalID: p.ID, Result: b}, true, nil
	case http.StatusNotFound:
		return keel.Outcome{}, false, nil
	default:
		return keel.Outcome{}, false, fmt.Errorf("lookup %s: status %d", opID, resp.StatusCode)
	}
}

var _ Counter = HTTPPublisher{}

// Count implements Counter: the publications the server lists for
// operationID (GET {base}/publications, which answers whatever the
// contract; a test's sandbox, not a production lookup).
func (h HTTPPublisher) Count(ctx context.Context, opID string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(h.Base, "/")+"/publications", nil)
	if err != nil {
		return 0, err
	}
	resp, err := h.client().Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("list publications: status %d", resp.StatusCode)
	}
	var list struct {
		Publications []Publication `json:"publications"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&list); err != nil {
		return 0, fmt.Errorf("list publications: %w", err)
	}
	n := 0
	for _, p := range list.Publications {
		if p.OperationID == opID {
			n++
		}
	}
	return n, nil
}
