package workspace

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	artfs "github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/kernel/artifact"
)

// counting wraps the real fs backend and counts Puts by CheckpointID.
type counting struct {
	*artfs.Store
	mu   sync.Mutex
	puts map[string]int
	by   map[string]int64
}

func (c *counting) Put(ctx context.Context, k artifact.Key, data []byte) (artifact.Info, error) {
	c.mu.Lock()
	c.puts[k.CheckpointID]++
	c.by[k.CheckpointID] += int64(len(data))
	c.mu.Unlock()
	return c.Store.Put(ctx, k, data)
}

func (c *counting) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.puts, c.by = map[string]int{}, map[string]int64{}
}

func newStore(t testing.TB) *counting {
	t.Helper()
	s, err := artfs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := &counting{Store: s}
	c.reset()
	return c
}

// node is one thing to create in a test tree.
type node struct {
	path, content, link string
	dir                 bool
	mode                fs.FileMode
}

func build(t testing.TB, dir string, nodes ...node) {
	t.Helper()
	for _, n := range nodes {
		p := filepath.Join(dir, filepath.FromSlash(n.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case n.link != "":
			err = os.Symlink(n.link, p)
		case n.dir:
			err = os.Mkdir(p, 0o755)
		default:
			err = os.WriteFile(p, []byte(n.content), 0o644)
		}
		if err == nil && n.mode != 0 {
			err = os.Chmod(p, n.mode)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// treeOf describes a tree as path → "type mode content|target", for
// byte-for-byte comparison including modes, empty dirs and links.
func treeOf(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			tgt, _ := os.Readlink(p)
			out[rel] = "link " + tgt
		case fi.IsDir():
			out[rel] = "dir " + fi.Mode().Perm().String()
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = "file " + fi.Mode().Perm().String() + " " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
