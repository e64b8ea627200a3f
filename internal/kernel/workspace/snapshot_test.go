package workspace

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var ctx = context.Background()

func sampleTree(t *testing.T, dir string) {
	t.Helper()
	build(t, dir,
		node{path: "README.md", content: "# hi\n"},
		node{path: "bin/run.sh", content: "#!/bin/sh\necho ok\n", mode: 0o755},
		node{path: "secret.txt", content: "private", mode: 0o600},
		node{path: "empty", dir: true},
		node{path: "ro", dir: true, mode: 0o555},
		node{path: "src/a/b/deep.go", content: strings.Repeat("x", 20000)},
		node{path: "src/zero", content: ""},
		node{path: "src/link", link: "a/b/deep.go"},
		node{path: "src/a/b/up", link: "../../../README.md"},
	)
}

func TestRoundTripByteIdentical(t *testing.T) {
	src := t.TempDir()
	sampleTree(t, src)
	v := NewVersioner(newStore(t), Limits{})
	snap, err := v.Snapshot(ctx, "run1", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := v.Snapshot(ctx, "run1", src, nil)
	if err != nil || again.Version != snap.Version {
		t.Fatalf("same tree, version %v then %v (%v): not canonical", snap.Version, again.Version, err)
	}
	parsed, err := ParseVersion(snap.Version.String())
	if err != nil || parsed != snap.Version {
		t.Fatalf("ParseVersion(%s) = %v %v", snap.Version, parsed, err)
	}
	dst := filepath.Join(t.TempDir(), "restored")
	if _, err := v.Restore(ctx, parsed, dst); err != nil {
		t.Fatal(err)
	}
	if want, got := treeOf(t, src), treeOf(t, dst); !maps.Equal(want, got) {
		t.Fatalf("restored tree differs:\nwant %v\ngot  %v", want, got)
	}
	// Restoring over an existing workspace replaces it whole.
	build(t, dst, node{path: "stray", content: "x"})
	if _, err := v.Restore(ctx, parsed, dst); err != nil {
		t.Fatal(err)
	}
	if want, got := treeOf(t, src), treeOf(t, dst); !maps.Equal(want, got) {
		t.Fatalf("restore over a tree differs:\nwant %v\ngot  %v", want, got)
	}
}

func TestOneFileChangeWritesOneBlobAndAManifest(t *testing.T) {
	src := t.TempDir()
	sampleTree(t, src)
	art := newStore(t)
	v := NewVersioner(art, Limits{})
	first, err := v.Snapshot(ctx, "run1", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if art.puts[manifestsID] != 1 || art.puts[blobsID] != 5 {
		t.Fatalf("first snapshot puts %v, want 5 blobs (distinct contents) + 1 manifest", art.puts)
	}
	art.reset()
	build(t, src, node{path: "src/zero", content: "changed"})
	second, err := v.Snapshot(ctx, "run1", src, first.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if art.puts[manifestsID] != 1 || art.puts[blobsID] != 1 || art.by[blobsID] != 7 {
		t.Fatalf("one-file change puts %v (%v bytes), want 1 blob of 7 bytes + 1 manifest", art.puts, art.by)
	}
	if second.BlobsPut != 1 || second.BytesPut != 7 || second.Version == first.Version {
		t.Fatalf("snapshot = %+v", second)
	}
}

func TestLimitsStoreNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lim   Limits
		limit string
	}{
		{"total", Limits{MaxTotalBytes: 1000}, "MaxTotalBytes"},
		{"files", Limits{MaxFiles: 5}, "MaxFiles"},
		{"one file", Limits{MaxFileBytes: 10000}, "MaxFileBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			sampleTree(t, src)
			art := newStore(t)
			_, err := NewVersioner(art, tc.lim).Snapshot(ctx, "run1", src, nil)
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), tc.limit) {
				t.Fatalf("Snapshot = %v, want ErrTooLarge naming %s", err, tc.limit)
			}
			if len(art.puts) != 0 {
				t.Errorf("puts %v before the refusal, want none", art.puts)
			}
		})
	}
}

func TestRestoreBadContentLeavesNoTree(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, art *counting, m *Manifest)
		want  error
	}{
		{"corrupt blob", func(t *testing.T, art *counting, m *Manifest) {
			e, _ := m.Lookup("README.md")
			if err := os.WriteFile(art.ObjectPath(e.SHA256), []byte("# HI\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, ErrBlob},
		{"missing blob", func(t *testing.T, art *counting, m *Manifest) {
			e, _ := m.Lookup("src/a/b/deep.go")
			if err := os.Remove(art.ObjectPath(e.SHA256)); err != nil {
				t.Fatal(err)
			}
		}, ErrBlob},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			sampleTree(t, src)
			art := newStore(t)
			v := NewVersioner(art, Limits{})
			snap, err := v.Snapshot(ctx, "run1", src, nil)
			if err != nil {
				t.Fatal(err)
			}
			tc.spoil(t, art, snap.Manifest)
			parent := t.TempDir()
			dst := filepath.Join(parent, "ws")
			build(t, dst, node{path: "previous", content: "kept"})
			if _, err := v.Restore(ctx, snap.Version, dst); !errors.Is(err, tc.want) {
				t.Fatalf("Restore = %v, want %v", err, tc.want)
			}
			if got := treeOf(t, parent); len(got) != 2 || got["ws/previous"] != "file -rw-r--r-- kept" {
				t.Fatalf("after a failed restore the parent holds %v, want only the previous tree", got)
			}
		})
	}
}

func TestTamperedManifestRefused(t *testing.T) {
	src := t.TempDir()
	sampleTree(t, src)
	art := newStore(t)
	v := NewVersioner(art, Limits{})
	snap, err := v.Snapshot(ctx, "run1", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	other := snap.Version
	other.SHA256 = strings.Repeat("0", 64)
	if _, err := v.Restore(ctx, other, filepath.Join(t.TempDir(), "x")); err == nil {
		t.Fatal("Restore of an unknown version succeeded")
	}
	evil := &Manifest{Entries: []Entry{{Path: "../evil", Type: TypeDir, Mode: 0o755}}}
	b, _ := evil.encode()
	if _, err := decodeManifest(b, sha256Hex(b)); !errors.Is(err, ErrPathEscapes) {
		t.Fatalf("manifest with ../evil = %v, want ErrPathEscapes", err)
	}
}

func TestForkSharesBlobs(t *testing.T) {
	parentDir := t.TempDir()
	sampleTree(t, parentDir)
	art := newStore(t)
	v := NewVersioner(art, Limits{})
	atFork, err := v.Snapshot(ctx, "parent", parentDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The child's checkpoint carries the parent's version: nothing copied.
	art.reset()
	childDir := filepath.Join(t.TempDir(), "child")
	m, err := v.Restore(ctx, atFork.Version, childDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(art.puts) != 0 {
		t.Fatalf("fork put %v, want nothing", art.puts)
	}
	build(t, childDir, node{path: "child.txt", content: "mine"})
	build(t, parentDir, node{path: "README.md", content: "parent moved on"})
	child, err := v.Snapshot(ctx, "child", childDir, m)
	if err != nil {
		t.Fatal(err)
	}
	if child.BlobsPut != 1 {
		t.Fatalf("child snapshot put %d blobs, want 1 (child.txt)", child.BlobsPut)
	}
	for _, e := range child.Manifest.Entries {
		if want := map[bool]string{true: "child", false: "parent"}[e.Path == "child.txt"]; e.Type == TypeFile && e.Run != want {
			t.Errorf("%s: blob in run %q, want %q", e.Path, e.Run, want)
		}
	}
	// Writes in one never show in the other.
	again := filepath.Join(t.TempDir(), "again")
	if _, err := v.Restore(ctx, child.Version, again); err != nil {
		t.Fatal(err)
	}
	if got := treeOf(t, again); got["README.md"] != "file -rw-r--r-- # hi\n" || got["child.txt"] == "" {
		t.Fatalf("child restored %v", got)
	}
	if _, err := os.Stat(filepath.Join(parentDir, "child.txt")); err == nil {
		t.Fatal("child's file shows in the parent")
	}
}
