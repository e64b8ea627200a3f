package workspace

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/keelrun/keel/internal/kernel/artifact"
)

// Getter is the read side of the artifact store: all that reading a
// stored version needs, so a reader (the API) holds no Put.
type Getter interface {
	Get(ctx context.Context, k artifact.Key) ([]byte, artifact.Info, error)
}

// ReadManifest reads the manifest of ver from g and checks it against the
// version's hash and the manifest rules (ErrBadManifest).
func ReadManifest(ctx context.Context, g Getter, ver Version) (*Manifest, error) {
	b, _, err := g.Get(ctx, manifestKey(ver))
	if err != nil {
		return nil, fmt.Errorf("workspace: manifest %s: %w", ver, err)
	}
	return decodeManifest(b, ver.SHA256)
}

// ReadFile returns the content of the file entry e, checked against the
// entry's size and sha256. A blob that is missing, fails the store's own
// hash, or does not match e is ErrBlob: the caller never gets bytes that
// are not the manifest's.
func ReadFile(ctx context.Context, g Getter, e Entry) ([]byte, error) {
	if e.Type != TypeFile {
		return nil, fmt.Errorf("workspace: %s is a %s, not a file", e.Path, e.Type)
	}
	data, _, err := g.Get(ctx, blobKey(e.Run, e.SHA256))
	switch {
	case errors.Is(err, artifact.ErrNotFound), errors.Is(err, artifact.ErrCorrupt):
		return nil, fmt.Errorf("%w: %s (sha256 %s in run %s): %w", ErrBlob, e.Path, e.SHA256, e.Run, err)
	case err != nil:
		return nil, fmt.Errorf("workspace: get blob of %s: %w", e.Path, err)
	}
	// The store checks its own hash; this checks the manifest's, so a blob
	// stored under the wrong name is caught too.
	if int64(len(data)) != e.Size || sha256Hex(data) != e.SHA256 {
		return nil, fmt.Errorf("%w: %s: content does not match sha256 %s, size %d", ErrBlob, e.Path, e.SHA256, e.Size)
	}
	return data, nil
}

// BlobKey is where the content of e is stored (files only).
func BlobKey(e Entry) artifact.Key { return blobKey(e.Run, e.SHA256) }

// ManifestKey is where the manifest of ver is stored.
func ManifestKey(ver Version) artifact.Key { return manifestKey(ver) }

// Files counts the manifest's regular files.
func (m *Manifest) Files() int {
	n := 0
	for _, e := range m.Entries {
		if e.Type == TypeFile {
			n++
		}
	}
	return n
}

// Children returns the entries directly inside dir ("" is the root), in
// path order. It says nothing of whether dir exists: see Lookup.
func (m *Manifest) Children(dir string) []Entry {
	var out []Entry
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	for _, e := range m.Entries {
		rest, ok := strings.CutPrefix(e.Path, prefix)
		if ok && rest != "" && !strings.Contains(rest, "/") {
			out = append(out, e)
		}
	}
	return out
}

// Name is the last element of the entry's path.
func (e Entry) Name() string { return path.Base(e.Path) }
