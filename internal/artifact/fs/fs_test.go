package fs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/keelrun/keel/internal/artifact"
	"github.com/keelrun/keel/internal/artifact/artifacttest"
	"github.com/keelrun/keel/internal/artifact/fs"
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
	tmp, err := os.ReadDir(filepath.Join(dir, "tmp"))
	if err != nil || len(tmp) != 0 {
		t.Fatalf("tmp/ holds %d entries (%v) after puts", len(tmp), err)
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
