package fs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/keelrun/keel/internal/artifact"
)

// Store is a file-system artifact store. It is safe for concurrent use by
// goroutines and by processes sharing the root directory.
type Store struct {
	root string
}

var _ artifact.Store = (*Store)(nil)

// New opens (creating if needed) a store rooted at dir.
func New(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("artifact fs: empty root directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("artifact fs: %w", err)
	}
	for _, d := range []string{"objects/sha256", "runs", "tmp"} {
		if err := os.MkdirAll(filepath.Join(abs, d), 0o755); err != nil {
			return nil, fmt.Errorf("artifact fs: %w", err)
		}
	}
	return &Store{root: abs}, nil
}

// ObjectPath is where the content with the given sha256 (hex) lives. It is
// exported for tests and operators (e.g. to inspect or corrupt a blob).
func (s *Store) ObjectPath(sum string) string {
	return filepath.Join(s.root, "objects", "sha256", sum[:2], sum)
}

func (s *Store) pointerPath(k artifact.Key) string {
	return filepath.Join(s.root, filepath.FromSlash(k.Path()))
}

// Put stores data at k. See the package doc for durability and immutability.
func (s *Store) Put(ctx context.Context, k artifact.Key, data []byte) (artifact.Info, error) {
	if err := k.Validate(); err != nil {
		return artifact.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return artifact.Info{}, err
	}
	sumb := sha256.Sum256(data)
	info := artifact.Info{Key: k, SHA256: hex.EncodeToString(sumb[:]), Size: int64(len(data))}

	// Fast path: an existing pointer decides without writing anything.
	if existing, err := s.readPointer(k); err == nil {
		return samePointer(info, existing)
	} else if !errors.Is(err, artifact.ErrNotFound) {
		return artifact.Info{}, err
	}

	obj := s.ObjectPath(info.SHA256)
	if err := s.writeObject(obj, data); err != nil {
		return artifact.Info{}, err
	}
	ptr := s.pointerPath(k)
	if err := s.linkNew(ptr, []byte(info.SHA256+" "+strconv.FormatInt(info.Size, 10)+"\n")); err != nil {
		if errors.Is(err, fs.ErrExist) {
			existing, rerr := s.readPointer(k)
			if rerr != nil {
				return artifact.Info{}, rerr
			}
			return samePointer(info, existing)
		}
		return artifact.Info{}, err
	}
	return info, nil
}

func samePointer(want, existing artifact.Info) (artifact.Info, error) {
	if existing.SHA256 == want.SHA256 && existing.Size == want.Size {
		return want, nil
	}
	return artifact.Info{}, fmt.Errorf("%w: %s", artifact.ErrExists, want.Key.Path())
}

// writeObject makes sure the content-addressed object exists. Rename may
// replace an existing object: it has the same name, so the same content.
func (s *Store) writeObject(path string, data []byte) error {
	if st, err := os.Stat(path); err == nil && st.Size() == int64(len(data)) {
		return nil
	}
	tmp, err := s.writeTemp(data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // no-op after a successful rename
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("artifact fs: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("artifact fs: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

// linkNew creates path with content, failing with fs.ErrExist if it exists.
func (s *Store) linkNew(path string, content []byte) error {
	tmp, err := s.writeTemp(content)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("artifact fs: %w", err)
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fs.ErrExist
		}
		return fmt.Errorf("artifact fs: %w", err)
	}
	// The parent directories may be new too: sync up to the root.
	for d := dir; strings.HasPrefix(d, s.root) && d != s.root; d = filepath.Dir(d) {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// writeTemp writes data to a new fsync'd file under tmp/ (same file system
// as the final location, so rename and link are atomic).
func (s *Store) writeTemp(data []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Join(s.root, "tmp"), "put-*")
	if err != nil {
		return "", fmt.Errorf("artifact fs: %w", err)
	}
	name := f.Name()
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(name)
		return "", fmt.Errorf("artifact fs: %w", werr)
	}
	return name, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("artifact fs: %w", err)
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil {
		return fmt.Errorf("artifact fs: sync %s: %w", dir, serr)
	}
	if cerr != nil {
		return fmt.Errorf("artifact fs: %w", cerr)
	}
	return nil
}

func (s *Store) readPointer(k artifact.Key) (artifact.Info, error) {
	b, err := os.ReadFile(s.pointerPath(k))
	if errors.Is(err, fs.ErrNotExist) {
		return artifact.Info{}, fmt.Errorf("%w: %s", artifact.ErrNotFound, k.Path())
	}
	if err != nil {
		return artifact.Info{}, fmt.Errorf("artifact fs: %w", err)
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 || len(fields[0]) != sha256.Size*2 {
		return artifact.Info{}, fmt.Errorf("%w: %s: malformed pointer", artifact.ErrCorrupt, k.Path())
	}
	if _, err := hex.DecodeString(fields[0]); err != nil {
		return artifact.Info{}, fmt.Errorf("%w: %s: malformed pointer", artifact.ErrCorrupt, k.Path())
	}
	size, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil || size < 0 {
		return artifact.Info{}, fmt.Errorf("%w: %s: malformed pointer", artifact.ErrCorrupt, k.Path())
	}
	return artifact.Info{Key: k, SHA256: fields[0], Size: size}, nil
}

// Get returns the content at k after checking it against its hash.
func (s *Store) Get(ctx context.Context, k artifact.Key) ([]byte, artifact.Info, error) {
	if err := k.Validate(); err != nil {
		return nil, artifact.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return nil, artifact.Info{}, err
	}
	info, err := s.readPointer(k)
	if err != nil {
		return nil, artifact.Info{}, err
	}
	data, err := os.ReadFile(s.ObjectPath(info.SHA256))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, artifact.Info{}, fmt.Errorf("%w: %s: content missing", artifact.ErrCorrupt, k.Path())
	}
	if err != nil {
		return nil, artifact.Info{}, fmt.Errorf("artifact fs: %w", err)
	}
	sum := sha256.Sum256(data)
	if int64(len(data)) != info.Size || hex.EncodeToString(sum[:]) != info.SHA256 {
		return nil, artifact.Info{}, fmt.Errorf("%w: %s", artifact.ErrCorrupt, k.Path())
	}
	return data, info, nil
}

// List returns every blob of the run, ordered by key. It reads pointers
// only; it does not re-hash content.
func (s *Store) List(ctx context.Context, runID string) ([]artifact.Info, error) {
	if err := (artifact.Key{RunID: runID, CheckpointID: "x", Name: "x"}).Validate(); err != nil {
		return nil, err
	}
	base := filepath.Join(s.root, "runs", runID, "checkpoints")
	cps, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("artifact fs: %w", err)
	}
	var out []artifact.Info
	for _, cp := range cps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !cp.IsDir() {
			continue
		}
		names, err := os.ReadDir(filepath.Join(base, cp.Name()))
		if err != nil {
			return nil, fmt.Errorf("artifact fs: %w", err)
		}
		for _, n := range names {
			if n.IsDir() {
				continue
			}
			k := artifact.Key{RunID: runID, CheckpointID: cp.Name(), Name: n.Name()}
			info, err := s.readPointer(k)
			if err != nil {
				return nil, err
			}
			out = append(out, info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key.Path() < out[j].Key.Path() })
	return out, nil
}
