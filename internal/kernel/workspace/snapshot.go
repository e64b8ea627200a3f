package workspace

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"

	"github.com/keelrun/keel/internal/kernel/artifact"
)

// CheckpointIDs under which a run's workspace content is stored.
const (
	manifestsID = "workspace-manifests"
	blobsID     = "workspace-blobs"
)

// Artifacts is the part of artifact.Store a Versioner uses.
type Artifacts interface {
	Put(ctx context.Context, k artifact.Key, data []byte) (artifact.Info, error)
	Get(ctx context.Context, k artifact.Key) ([]byte, artifact.Info, error)
}

var _ Artifacts = artifact.Store(nil)

// Limits bound one run's workspace. Zero fields take the defaults.
type Limits struct {
	MaxTotalBytes int64 // sum of file sizes; default 1 GiB
	MaxFiles      int   // files, directories and symlinks; default 100,000
	MaxFileBytes  int64 // one file; default 256 MiB (a blob is held in memory to be put)
}

// DefaultLimits are the limits of a zero Limits.
var DefaultLimits = Limits{MaxTotalBytes: 1 << 30, MaxFiles: 100_000, MaxFileBytes: 256 << 20}

func (l Limits) withDefaults() Limits {
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = DefaultLimits.MaxTotalBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultLimits.MaxFiles
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultLimits.MaxFileBytes
	}
	return l
}

// Versioner snapshots and restores workspaces in an artifact store.
type Versioner struct {
	art Artifacts
	lim Limits
}

// NewVersioner returns a Versioner over art with the given limits.
func NewVersioner(art Artifacts, lim Limits) *Versioner {
	return &Versioner{art: art, lim: lim.withDefaults()}
}

// Snapshot is what Versioner.Snapshot stored.
type Snapshot struct {
	Version  Version
	Manifest *Manifest
	// BlobsPut and BytesPut count the blobs written (the manifest excluded);
	// ManifestBytes is the manifest's size.
	BlobsPut      int
	BytesPut      int64
	ManifestBytes int
}

// Snapshot stores the tree at dir as a version of runID's workspace. prev
// is the manifest the tree was restored from or last snapshotted to (nil
// for none): content whose hash it lists is not put again. When Snapshot
// returns nil the version is durable (as durable as the artifact store's
// Put). Limits and path checks fail before anything is put.
func (v *Versioner) Snapshot(ctx context.Context, runID, dir string, prev *Manifest) (Snapshot, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return Snapshot{}, fmt.Errorf("workspace: open %s: %w", dir, err)
	}
	defer root.Close()
	entries, err := v.walk(root)
	if err != nil {
		return Snapshot{}, err
	}
	known := prev.blobRuns()
	var snap Snapshot
	for i := range entries {
		e := &entries[i]
		if e.Type != TypeFile {
			continue
		}
		if err := ctx.Err(); err != nil {
			return Snapshot{}, err
		}
		data, err := readBounded(root, e.Path, v.lim.MaxFileBytes)
		if err != nil {
			return Snapshot{}, err
		}
		e.Size, e.SHA256 = int64(len(data)), sha256Hex(data)
		if run, ok := known[e.SHA256]; ok {
			e.Run = run
			continue
		}
		e.Run = runID
		if _, err := v.art.Put(ctx, blobKey(runID, e.SHA256), data); err != nil {
			return Snapshot{}, fmt.Errorf("workspace: put blob of %s: %w", e.Path, err)
		}
		known[e.SHA256] = runID
		snap.BlobsPut++
		snap.BytesPut += e.Size
	}
	m := &Manifest{Entries: entries}
	if total := m.TotalBytes(); total > v.lim.MaxTotalBytes { // files grew during the walk
		return Snapshot{}, fmt.Errorf("%w: %d bytes > MaxTotalBytes %d", ErrTooLarge, total, v.lim.MaxTotalBytes)
	}
	b, err := m.encode()
	if err != nil {
		return Snapshot{}, fmt.Errorf("workspace: encode manifest: %w", err)
	}
	snap.Version = Version{RunID: runID, SHA256: sha256Hex(b)}
	if _, err := v.art.Put(ctx, manifestKey(snap.Version), b); err != nil {
		return Snapshot{}, fmt.Errorf("workspace: put manifest: %w", err)
	}
	snap.Manifest, snap.ManifestBytes = m, len(b)
	return snap, nil
}

// walk lists the tree sorted by path, checking types, symlinks and limits
// from lstat sizes before any content is read or put.
func (v *Versioner) walk(root *os.Root) ([]Entry, error) {
	var entries []Entry
	var total int64
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return rootEscape(p, err)
		}
		if p == "." {
			return nil
		}
		if len(entries) >= v.lim.MaxFiles {
			return fmt.Errorf("%w: more than MaxFiles %d entries", ErrTooLarge, v.lim.MaxFiles)
		}
		info, err := root.Lstat(p)
		if err != nil {
			return rootEscape(p, err)
		}
		e := Entry{Path: p, Mode: uint32(info.Mode().Perm())}
		switch t := info.Mode().Type(); {
		case t == fs.ModeDir:
			e.Type = TypeDir
		case t == fs.ModeSymlink:
			e.Type = TypeSymlink
			if e.Target, err = root.Readlink(p); err != nil {
				return err
			}
			if err := checkLinkTarget(p, e.Target); err != nil {
				return err
			}
			e.Mode = 0o777
		case t.IsRegular():
			e.Type, e.Size = TypeFile, info.Size()
			if e.Size > v.lim.MaxFileBytes {
				return fmt.Errorf("%w: %s is %d bytes > MaxFileBytes %d", ErrTooLarge, p, e.Size, v.lim.MaxFileBytes)
			}
			if total += e.Size; total > v.lim.MaxTotalBytes {
				return fmt.Errorf("%w: more than MaxTotalBytes %d", ErrTooLarge, v.lim.MaxTotalBytes)
			}
		default:
			return fmt.Errorf("%w: %s is %s", ErrUnsupported, p, t)
		}
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	return entries, nil
}

// readBounded reads a file, refusing one that grew past max since the walk.
func readBounded(root *os.Root, p string, max int64) ([]byte, error) {
	f, err := root.Open(p)
	if err != nil {
		return nil, rootEscape(p, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("workspace: read %s: %w", p, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%w: %s grew past MaxFileBytes %d", ErrTooLarge, p, max)
	}
	return data, nil
}

func blobKey(runID, sum string) artifact.Key {
	return artifact.Key{RunID: runID, CheckpointID: blobsID, Name: sum}
}

func manifestKey(v Version) artifact.Key {
	return artifact.Key{RunID: v.RunID, CheckpointID: manifestsID, Name: v.SHA256 + ".json"}
}
