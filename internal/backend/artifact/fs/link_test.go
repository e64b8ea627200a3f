package fs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/kernel/artifact"
)

// keyFile is where a flat key lives (see layout.go).
func keyFile(dir string, k artifact.Key) string {
	return filepath.Join(dir, "runs", k.RunID, k.CheckpointID+"~"+k.Name)
}

func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	sa, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	return os.SameFile(sa, sb)
}

// Small content's key is the object's own inode; big content's is a
// pointer file. Damage to either is ErrCorrupt from Get, and for a linked
// key from List too (List verifies what it reads).
func TestKeyForms(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		size   int
		linked bool
	}{
		{"empty", 0, true},
		{"small", 100, true},
		{"at the limit", 16 << 10, true},
		{"one byte over", 16<<10 + 1, false},
		{"big", 70_000, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := fs.New(dir)
			if err != nil {
				t.Fatal(err)
			}
			data := []byte(strings.Repeat("x", tc.size))
			k := artifact.Key{RunID: "r", CheckpointID: "c", Name: "n"}
			info, err := s.Put(ctx, k, data)
			if err != nil {
				t.Fatal(err)
			}
			if got := sameFile(t, keyFile(dir, k), s.ObjectPath(info.SHA256)); got != tc.linked {
				t.Fatalf("key is the object's inode: %v, want %v", got, tc.linked)
			}
			if got, gi, err := s.Get(ctx, k); err != nil || string(got) != string(data) || gi != info {
				t.Fatalf("Get = %d bytes, %+v, %v", len(got), gi, err)
			}
			if l, err := s.List(ctx, "r"); err != nil || len(l) != 1 || l[0] != info {
				t.Fatalf("List = %+v, %v", l, err)
			}
			if tc.size == 0 {
				return // nothing to flip
			}
			obj := s.ObjectPath(info.SHA256)
			b, _ := os.ReadFile(obj)
			b[len(b)/2] ^= 0xff
			if err := os.WriteFile(obj, b, 0o600); err != nil {
				t.Fatal(err)
			}
			if got, _, err := s.Get(ctx, k); !errors.Is(err, artifact.ErrCorrupt) || got != nil {
				t.Fatalf("Get after damage = %d bytes, %v; want ErrCorrupt", len(got), err)
			}
			if _, err := s.List(ctx, "r"); tc.linked && !errors.Is(err, artifact.ErrCorrupt) {
				t.Fatalf("List after damage to a linked key: %v, want ErrCorrupt", err)
			}
		})
	}
}

// Many Puts of one new content at once, at different keys: one object,
// every key a link to it (an object's name is never given to a second
// inode, which would leave the first one's links unverifiable).
func TestConcurrentSameContent(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := fs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("the same report in every run")
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			_, err := s.Put(ctx, artifact.Key{RunID: fmt.Sprintf("run_%d", i%4), CheckpointID: "c", Name: fmt.Sprint(i)}, data)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 16 {
		k := artifact.Key{RunID: fmt.Sprintf("run_%d", i%4), CheckpointID: "c", Name: fmt.Sprint(i)}
		got, info, err := s.Get(ctx, k)
		if err != nil || string(got) != string(data) {
			t.Fatalf("key %d: Get = %q, %v", i, got, err)
		}
		if !sameFile(t, keyFile(dir, k), s.ObjectPath(info.SHA256)) {
			t.Fatalf("key %d is not a link to the object", i)
		}
	}
}
