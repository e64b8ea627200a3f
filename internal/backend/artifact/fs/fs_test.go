package fs_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/artifact/artifacttest"
)

func TestConformance(t *testing.T) {
	artifacttest.Run(t, func(t *testing.T) artifacttest.Backend {
		s, err := fs.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return artifacttest.Backend{
			Store: s,
			Corrupt: func(t *testing.T, k artifact.Key) {
				// Flip one byte of the content in place, as a bad disk would.
				_, info, err := s.Get(context.Background(), k)
				if err != nil {
					t.Fatalf("corrupt: %v", err)
				}
				p := s.ObjectPath(info.SHA256)
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatalf("corrupt: %v", err)
				}
				b[len(b)/2] ^= 0xff
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatalf("corrupt: %v", err)
				}
			},
		}
	})
}

// A store reopened on the same directory sees what the first one wrote.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s1, err := fs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	k := artifact.Key{RunID: "r", CheckpointID: "c", Name: "n"}
	if _, err := s1.Put(ctx, k, []byte("durable")); err != nil {
		t.Fatal(err)
	}
	s2, err := fs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := s2.Get(ctx, k)
	if err != nil || string(got) != "durable" {
		t.Fatalf("Get after reopen = %q, %v", got, err)
	}
	// No temp files are left behind by a successful put.
	if n := countTemps(t, dir); n != 0 {
		t.Fatalf("%d temp files left after puts", n)
	}
}

// A missing object behind an existing pointer is corruption, not absence.
func TestMissingObjectIsCorrupt(t *testing.T) {
	ctx := context.Background()
	s, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k := artifact.Key{RunID: "r", CheckpointID: "c", Name: "n"}
	info, err := s.Put(ctx, k, []byte("gone soon"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(s.ObjectPath(info.SHA256)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx, k); !errors.Is(err, artifact.ErrCorrupt) {
		t.Fatalf("Get = %v, want ErrCorrupt", err)
	}
}

// A store written before pointers moved to one directory per run
// (runs/{run}/checkpoints/{cp}/{name}) reads unchanged, keeps its keys
// immutable and lists them with the new ones.
func TestPointerFilesOfAnOlderStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := fs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	old := []byte("written by an older keel")
	sum := sha256.Sum256(old)
	hx := hex.EncodeToString(sum[:])
	obj := s.ObjectPath(hx)
	ptr := filepath.Join(dir, "runs", "r", "checkpoints", "c", "old")
	for p, b := range map[string][]byte{obj: old, ptr: []byte(hx + " " + strconv.Itoa(len(old)) + "\n")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	k := artifact.Key{RunID: "r", CheckpointID: "c", Name: "old"}
	if got, info, err := s.Get(ctx, k); err != nil || string(got) != string(old) || info.SHA256 != hx {
		t.Fatalf("Get = %q, %+v, %v", got, info, err)
	}
	if _, err := s.Put(ctx, k, old); err != nil {
		t.Fatalf("Put of the same content: %v", err)
	}
	if _, err := s.Put(ctx, k, []byte("other")); !errors.Is(err, artifact.ErrExists) {
		t.Fatalf("Put of other content: %v, want ErrExists", err)
	}
	if _, err := s.Put(ctx, artifact.Key{RunID: "r", CheckpointID: "c", Name: "new"}, []byte("new")); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx, "r")
	if err != nil || len(list) != 2 || list[0].Key.Name != "new" || list[1].Key.Name != "old" || list[1].SHA256 != hx {
		t.Fatalf("List = %+v, %v", list, err)
	}
}

// A malformed pointer is corruption, not absence.
func TestMalformedPointer(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := fs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "runs", "r", "checkpoints", "c")
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		make func(p string) error
	}{
		{"one field", func(p string) error { return os.WriteFile(p, []byte("abc\n"), 0o644) }},
		{"short hash", func(p string) error { return os.WriteFile(p, []byte("abcd 4\n"), 0o644) }},
		{"negative size", func(p string) error {
			return os.WriteFile(p, []byte(strings.Repeat("ab", 32)+" -1\n"), 0o644)
		}},
		{"not hex", func(p string) error { return os.WriteFile(p, []byte(strings.Repeat("zz", 32)+" 1\n"), 0o644) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ReplaceAll(tc.name, " ", "_")
			if err := tc.make(filepath.Join(base, name)); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.Get(ctx, artifact.Key{RunID: "r", CheckpointID: "c", Name: name}); !errors.Is(err, artifact.ErrCorrupt) {
				t.Fatalf("Get = %v, want ErrCorrupt", err)
			}
		})
	}
}
