package fs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/keelrun/keel/internal/kernel/artifact"
)

// Pointers live in one directory per run: runs/{run_id}/{cp}~{name}, the
// checkpoint id and the name escaped so that the one unescaped "~"
// separates them. Why not runs/{run_id}/checkpoints/{cp}/{name}, the key's
// own shape, as older stores have it: every directory is an inode to
// allocate and an entry to fsync, and a research run's two artifacts
// under two checkpoints made four directories (the run, checkpoints, two
// checkpoints) where now they make one. Allocating an inode is the
// dearest step of a Put on this machine's disk (ext4 without a journal,
// shared with builds that delete files all the time: the allocator steps
// over every inode freed in the last seconds): 0.3–1 ms of CPU each, more
// than an fsync. With small content's keys linked to their objects
// (pointer.go), a research run's two Puts allocate 2 inodes, were 7.
//
// A key whose escaped name would pass the file-name limit, and every key
// of an older store, lives at the nested path; both are read everywhere.

const (
	sep     = "~"
	nameMax = 255 // bytes in one file name (ext4, XFS, btrfs, APFS)
)

var (
	escaper   = strings.NewReplacer("%", "%25", sep, "%7E")
	unescaper = strings.NewReplacer("%25", "%", "%7E", sep)
)

// flatName is k's pointer name in its run's directory, or "" when too long.
func flatName(k artifact.Key) string {
	n := escaper.Replace(k.CheckpointID) + sep + escaper.Replace(k.Name)
	if len(n) > nameMax {
		return ""
	}
	return n
}

// parseFlat is the inverse of flatName.
func parseFlat(runID, n string) (artifact.Key, bool) {
	cp, name, ok := strings.Cut(n, sep)
	if !ok || strings.Contains(name, sep) {
		return artifact.Key{}, false
	}
	k := artifact.Key{RunID: runID, CheckpointID: unescaper.Replace(cp), Name: unescaper.Replace(name)}
	if k.Validate() != nil || flatName(k) != n {
		return artifact.Key{}, false
	}
	return k, true
}

func (s *Store) runDir(runID string) string { return filepath.Join(s.runsDir, runID) }

// pointerPath is where Put creates k's pointer.
func (s *Store) pointerPath(k artifact.Key) string {
	if n := flatName(k); n != "" {
		return filepath.Join(s.runDir(k.RunID), n)
	}
	return s.nestedPath(k)
}

// nestedPath is k's pointer in the older layout (and for over-long keys).
func (s *Store) nestedPath(k artifact.Key) string {
	return filepath.Join(s.root, filepath.FromSlash(k.Path()))
}

// readPointer reads k's key wherever it is (see readPointerAt).
func (s *Store) readPointer(k artifact.Key) (artifact.Info, []byte, error) {
	if flatName(k) != "" {
		info, content, err := s.readPointerAt(k, s.pointerPath(k))
		if !errors.Is(err, artifact.ErrNotFound) {
			return info, content, err
		}
	}
	return s.readPointerAt(k, s.nestedPath(k))
}

// List returns every blob of the run, ordered by key. It reads pointers
// only; it does not re-hash content.
func (s *Store) List(ctx context.Context, runID string) ([]artifact.Info, error) {
	if err := (artifact.Key{RunID: runID, CheckpointID: "x", Name: "x"}).Validate(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(s.runDir(runID))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("artifact fs: %w", err)
	}
	var out []artifact.Info
	for _, e := range entries {
		if e.IsDir() {
			if e.Name() == "checkpoints" {
				nested, err := s.listNested(ctx, runID)
				if err != nil {
					return nil, err
				}
				out = append(out, nested...)
			}
			continue
		}
		k, ok := parseFlat(runID, e.Name())
		if !ok {
			continue // not a pointer (e.g. a file an operator left)
		}
		info, _, err := s.readPointerAt(k, filepath.Join(s.runDir(runID), e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key.Path() < out[j].Key.Path() })
	return out, nil
}

// listNested lists runs/{run_id}/checkpoints/{cp}/{name}.
func (s *Store) listNested(ctx context.Context, runID string) ([]artifact.Info, error) {
	base := filepath.Join(s.runDir(runID), "checkpoints")
	cps, err := os.ReadDir(base)
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
			info, _, err := s.readPointerAt(k, s.nestedPath(k))
			if err != nil {
				return nil, err
			}
			out = append(out, info)
		}
	}
	return out, nil
}
