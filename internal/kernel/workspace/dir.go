package workspace

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
)

// Dir is the file API a tool uses on its run's workspace. Every name is a
// relative path inside the tree; "..", absolute paths and symlinks leading
// out are refused with ErrPathEscapes (os.Root does the resolution, so a
// link a command planted cannot make the worker read or write outside).
type Dir struct {
	root *os.Root
	lim  Limits
}

// OpenDir opens the workspace at dir; Write refuses a file over
// lim.MaxFileBytes.
func OpenDir(dir string, lim Limits) (*Dir, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: open %s: %w", dir, err)
	}
	return &Dir{root: root, lim: lim.withDefaults()}, nil
}

// Path is the workspace's host path (a sandboxed command sees it elsewhere).
func (d *Dir) Path() string { return d.root.Name() }

// Close releases the directory.
func (d *Dir) Close() error { return d.root.Close() }

// Read returns the content of the file at name.
func (d *Dir) Read(name string) ([]byte, error) {
	p, err := cleanRel(name)
	if err != nil {
		return nil, err
	}
	b, err := d.root.ReadFile(p)
	return b, rootEscape(name, err)
}

// Write creates or replaces the file at name, creating its parents.
func (d *Dir) Write(name string, data []byte, perm fs.FileMode) error {
	p, err := cleanRel(name)
	if err != nil {
		return err
	}
	if int64(len(data)) > d.lim.MaxFileBytes {
		return fmt.Errorf("%w: %s is %d bytes > MaxFileBytes %d", ErrTooLarge, p, len(data), d.lim.MaxFileBytes)
	}
	if dir := path.Dir(p); dir != "." {
		if err := d.root.MkdirAll(dir, 0o755); err != nil {
			return rootEscape(name, err)
		}
	}
	return rootEscape(name, d.root.WriteFile(p, data, perm))
}

// Remove deletes the file, symlink or directory tree at name.
func (d *Dir) Remove(name string) error {
	p, err := cleanRel(name)
	if err != nil {
		return err
	}
	if _, err := d.root.Lstat(p); err != nil {
		return rootEscape(name, err)
	}
	return rootEscape(name, d.root.RemoveAll(p))
}

// Info describes one entry of List.
type Info struct {
	Path string
	Type string // TypeFile, TypeDir or TypeSymlink
	Mode fs.FileMode
	Size int64
}

// List returns the entries directly under name ("" or "." for the top),
// sorted by path.
func (d *Dir) List(name string) ([]Info, error) {
	p := "."
	if name != "" && name != "." {
		var err error
		if p, err = cleanRel(name); err != nil {
			return nil, err
		}
	}
	des, err := fs.ReadDir(d.root.FS(), p)
	if err != nil {
		return nil, rootEscape(name, err)
	}
	out := make([]Info, 0, len(des))
	for _, de := range des {
		fi, err := de.Info()
		if err != nil {
			return nil, err
		}
		info := Info{Path: path.Join(p, de.Name()), Mode: fi.Mode().Perm(), Size: fi.Size(), Type: TypeFile}
		switch {
		case fi.IsDir():
			info.Type, info.Size = TypeDir, 0
		case fi.Mode()&fs.ModeSymlink != 0:
			info.Type = TypeSymlink
		case !fi.Mode().IsRegular():
			return nil, fmt.Errorf("%w: %s", ErrUnsupported, info.Path)
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}
