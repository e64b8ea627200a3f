package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrBlob means a blob a manifest names is missing or does not match it.
var ErrBlob = errors.New("workspace blob missing or corrupt")

// Manifest reads and checks the manifest of ver.
func (v *Versioner) Manifest(ctx context.Context, ver Version) (*Manifest, error) {
	return ReadManifest(ctx, v.art, ver)
}

// Restore writes the tree of ver at dir, byte for byte, verifying every
// blob. dir may be missing, empty, or an earlier workspace (replaced). The
// tree is built in a temporary directory beside dir and renamed into place
// only once complete: on any error (ErrBlob, ErrBadManifest, a context
// cancelled) dir is left as it was and the temporary directory removed.
func (v *Versioner) Restore(ctx context.Context, ver Version, dir string) (*Manifest, error) {
	m, err := v.Manifest(ctx, ver)
	if err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir)
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".restore-")
	if err != nil {
		return nil, fmt.Errorf("workspace: restore: %w", err)
	}
	if err := v.fill(ctx, m, tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	if err := replaceDir(tmp, dir); err != nil {
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	return m, nil
}

// fill writes m's entries under tmp; directories get their modes last so a
// read-only directory does not stop its own content from being written.
func (v *Versioner) fill(ctx context.Context, m *Manifest, tmp string) error {
	root, err := os.OpenRoot(tmp)
	if err != nil {
		return fmt.Errorf("workspace: restore: %w", err)
	}
	defer root.Close()
	for _, e := range m.Entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := v.writeEntry(ctx, root, e); err != nil {
			return err
		}
	}
	for i := len(m.Entries) - 1; i >= 0; i-- {
		if e := m.Entries[i]; e.Type == TypeDir {
			if err := root.Chmod(e.Path, fs.FileMode(e.Mode)); err != nil {
				return fmt.Errorf("workspace: restore %s: %w", e.Path, err)
			}
		}
	}
	return nil
}

func (v *Versioner) writeEntry(ctx context.Context, root *os.Root, e Entry) error {
	switch e.Type {
	case TypeDir:
		return rootEscape(e.Path, root.Mkdir(e.Path, 0o700))
	case TypeSymlink:
		return rootEscape(e.Path, root.Symlink(e.Target, e.Path))
	}
	data, err := ReadFile(ctx, v.art, e)
	if err != nil {
		return err
	}
	f, err := root.OpenFile(e.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fs.FileMode(e.Mode))
	if err != nil {
		return rootEscape(e.Path, err)
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = root.Chmod(e.Path, fs.FileMode(e.Mode)) // the umask trimmed OpenFile's mode
	}
	if werr != nil {
		return fmt.Errorf("workspace: restore %s: %w", e.Path, werr)
	}
	return nil
}

// replaceDir moves the complete tree tmp to dir. An existing dir is first
// renamed aside, so at every instant dir is the old tree, absent, or the
// new tree — never a partial one.
func replaceDir(tmp, dir string) error {
	info, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return renameDir(tmp, dir)
	case err != nil:
		return fmt.Errorf("workspace: restore: %w", err)
	case !info.IsDir():
		return fmt.Errorf("%w: %s", ErrNotEmpty, dir)
	}
	if os.Remove(dir) == nil { // empty: nothing to keep aside
		return renameDir(tmp, dir)
	}
	old := tmp + ".old"
	if err := os.Rename(dir, old); err != nil {
		return fmt.Errorf("workspace: restore: move old tree aside: %w", err)
	}
	if err := renameDir(tmp, dir); err != nil {
		_ = os.Rename(old, dir)
		return err
	}
	return os.RemoveAll(old)
}

func renameDir(tmp, dir string) error {
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp made it 0700
		return fmt.Errorf("workspace: restore: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("workspace: restore: %w", err)
	}
	return nil
}
