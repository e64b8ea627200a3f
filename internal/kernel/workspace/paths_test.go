package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// An outside dir with a secret, and a workspace holding links that try to
// reach it or the host.
func escapeFixture(t *testing.T) (ws, secret string) {
	t.Helper()
	base := t.TempDir()
	ws = filepath.Join(base, "ws")
	secret = filepath.Join(base, "secret")
	build(t, base, node{path: "secret/key", content: "canary"})
	build(t, ws,
		node{path: "ok.txt", content: "fine"},
		node{path: "etc", link: "/etc"},
		node{path: "up", link: "../"},
		node{path: "deep/er/up3", link: "../../../secret"},
		node{path: "deep/inner", link: "../ok.txt"},
	)
	return ws, secret
}

func TestDirRefusesEscapes(t *testing.T) {
	ws, _ := escapeFixture(t)
	d, err := OpenDir(ws, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, tc := range []struct{ name, path string }{
		{"dotdot", "../secret/key"},
		{"dotdot inside", "deep/../../secret/key"},
		{"absolute", "/etc/passwd"},
		{"symlink to /etc", "etc/passwd"},
		{"symlink to ../", "up/secret/key"},
		{"nested symlink out", "deep/er/up3/key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := d.Read(tc.path); !errors.Is(err, ErrPathEscapes) {
				t.Errorf("Read(%q) = %v, want ErrPathEscapes", tc.path, err)
			}
			if err := d.Write(tc.path, []byte("x"), 0o644); !errors.Is(err, ErrPathEscapes) {
				t.Errorf("Write(%q) = %v, want ErrPathEscapes", tc.path, err)
			}
			if err := d.Remove(tc.path); !errors.Is(err, ErrPathEscapes) {
				t.Errorf("Remove(%q) = %v, want ErrPathEscapes", tc.path, err)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(ws), "secret/key")); err != nil || string(b) != "canary" {
		t.Fatalf("secret changed: %q %v", b, err)
	}
	if b, err := d.Read("deep/inner"); err != nil || string(b) != "fine" {
		t.Errorf("link inside: %q %v, want fine", b, err)
	}
}

func TestDirReadWriteListRemove(t *testing.T) {
	d, err := OpenDir(t.TempDir(), Limits{MaxFileBytes: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Write("./a//b/c.txt", []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := d.Read("a/b/c.txt"); err != nil || string(b) != "hello" {
		t.Fatalf("Read = %q %v", b, err)
	}
	if err := d.Write("big", make([]byte, 9), 0o644); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Write over MaxFileBytes = %v, want ErrTooLarge", err)
	}
	l, err := d.List("a/b")
	if err != nil || len(l) != 1 || l[0].Path != "a/b/c.txt" || l[0].Size != 5 || l[0].Mode != 0o600 {
		t.Fatalf("List = %+v %v", l, err)
	}
	if err := d.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if l, err := d.List(""); err != nil || len(l) != 0 {
		t.Fatalf("List after Remove = %+v %v", l, err)
	}
}

func TestSnapshotRefusesLinksOut(t *testing.T) {
	for _, tc := range []struct {
		name string
		link node
	}{
		{"absolute /etc", node{path: "etc", link: "/etc"}},
		{"parent", node{path: "up", link: "../"}},
		{"nested parent", node{path: "d/b/c", link: "../../../x"}},
		{"absolute inside-looking", node{path: "l", link: "/workspace/a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			build(t, ws, node{path: "a", content: "x"}, tc.link)
			art := newStore(t)
			_, err := NewVersioner(art, Limits{}).Snapshot(context.Background(), "run1", ws, nil)
			if !errors.Is(err, ErrPathEscapes) {
				t.Fatalf("Snapshot = %v, want ErrPathEscapes", err)
			}
			if n := art.puts[blobsID] + art.puts[manifestsID]; n != 0 {
				t.Errorf("%d puts before the refusal, want 0", n)
			}
		})
	}
}

func TestCheckRel(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"a", true}, {"a/b", true}, {"", false}, {".", false}, {"..", false},
		{"../a", false}, {"a/../b", false}, {"/a", false}, {"a/", false}, {"a\\b", false},
	} {
		if err := checkRel(tc.in); (err == nil) != tc.ok {
			t.Errorf("checkRel(%q) = %v, want ok=%v", tc.in, err, tc.ok)
		}
	}
}
