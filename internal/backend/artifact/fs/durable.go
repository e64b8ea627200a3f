package fs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// maxKnown bounds each set of names known durable. Forgetting costs only
// fsyncs: a forgotten directory is synced again on its next use.
const maxKnown = 1 << 14

// knownSet is a bounded set of paths (directories) or hashes (objects)
// this Store has made durable itself, or has seen and then made durable.
// A name is added only after the fsyncs that make it durable returned, so
// a concurrent Put that finds a name missing does those fsyncs itself.
type knownSet struct {
	mu sync.Mutex
	m  map[string]struct{}
}

func (k *knownSet) has(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.m[name]
	return ok
}

func (k *knownSet) add(names ...string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil || len(k.m)+len(names) > maxKnown {
		k.m = make(map[string]struct{}, len(names))
	}
	for _, n := range names {
		k.m[n] = struct{}{}
	}
}

// fixedDir reports the directories New creates and makes durable: they
// never need a sync of their parent again.
func (s *Store) fixedDir(d string) bool {
	return d == s.root || d == s.runsDir || d == s.objDir || d == filepath.Dir(s.objDir) || d == s.tmpDir
}

// makeDurable makes the entries just made in dir (a rename or a link
// into it, or a directory created in it) survive a power loss, and with
// them every directory on the way from dir up to the root. Each
// directory's own entry lives in its parent, so a directory not known
// durable has its parent synced too, on up to the first one known
// durable. That covers the directories this Put created, and also ones a
// concurrent Put (or another process) created but may not have synced
// yet: a directory that merely exists proves nothing about a power loss.
// Directories are marked known only once the whole chain is synced.
func (s *Store) makeDurable(dir string) error {
	if err := s.syncDir(dir); err != nil {
		return err
	}
	var chain []string
	for d := dir; !s.fixedDir(d) && !s.dirs.has(d); d = filepath.Dir(d) {
		if !strings.HasPrefix(d, s.root+string(filepath.Separator)) {
			return fmt.Errorf("artifact fs: %s is outside the root %s", d, s.root)
		}
		if err := s.syncDir(filepath.Dir(d)); err != nil {
			return err
		}
		chain = append(chain, d)
	}
	if len(chain) > 0 {
		s.dirs.add(chain...)
	}
	return nil
}

// syncDir fsyncs a directory: the names in it (renames, links, new
// subdirectories) reach the disk.
func (s *Store) syncDir(dir string) error {
	s.dirSyncs.Add(1)
	s.note("syncdir", dir)
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

// note reports one durability-relevant operation to the test hook.
func (s *Store) note(op, path string) {
	if s.trace != nil {
		s.trace(op, path)
	}
}

// SyncStats counts the fsyncs a Store made since New.
type SyncStats struct {
	Files uint64 // content and pointer files
	Dirs  uint64 // directories
}

// Syncs returns the fsyncs made so far: what each Put costs the disk.
func (s *Store) Syncs() SyncStats {
	return SyncStats{Files: s.fileSyncs.Load(), Dirs: s.dirSyncs.Load()}
}
