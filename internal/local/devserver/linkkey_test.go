package devserver_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/fixture"
	"github.com/keelrun/keel/internal/fixture/fixturetest"
	"github.com/keelrun/keel/internal/local/devserver"
)

// TestDevLinkKeyFile is issue #40 item 5: keel dev starts on DATA/link.key
// as it finds it. A short key used to recurse until the stack overflowed
// (the exclusive create of a file that exists, forever); now it is
// refused with an error naming the file and the minimum length, and left
// as it is. An empty file (a crash while it was written) is replaced by a
// new key; a missing one is made.
func TestDevLinkKeyFile(t *testing.T) {
	long := strings.Repeat("k", 32)
	hexKey := regexp.MustCompile(`^[0-9a-f]{64}\n$`)
	cases := []struct {
		name    string
		content *string // nil: no file
		wantErr string  // "": keel dev starts
		want    func(string) bool
	}{
		{name: "missing", want: hexKey.MatchString},
		{name: "empty", content: ptr(""), want: hexKey.MatchString},
		{name: "blank", content: ptr(" \n"), want: hexKey.MatchString},
		{name: "short", content: ptr("abc\n"), wantErr: "holds 3 characters; it must hold a key of at least 32",
			want: func(s string) bool { return s == "abc\n" }},
		{name: "one short", content: ptr(long[1:]), wantErr: "holds 31 characters",
			want: func(s string) bool { return s == long[1:] }},
		{name: "long enough", content: ptr(long + "\n"), want: func(s string) bool { return s == long+"\n" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			path := filepath.Join(dir, "link.key")
			if tc.content != nil {
				if err := os.WriteFile(path, []byte(*tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := config.FromEnv(func(k string) string { return map[string]string{"KEEL_DATA_DIR": dir}[k] })
			if err != nil {
				t.Fatal(err)
			}
			rt, err := compose.Open(ctx, cfg, fixturetest.App(fixture.DirPublisher{Dir: filepath.Join(dir, "published")}), compose.Backends{})
			if err != nil {
				t.Fatal(err)
			}
			srv, err := devserver.Start(ctx, devserver.Config{DataDir: dir, Addr: "127.0.0.1:0", Runtime: rt})
			if err == nil {
				srv.Close()
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("keel dev did not start: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("keel dev started, want an error containing %q", tc.wantErr)
			case tc.wantErr != "" && (!strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %q, want one naming %s and containing %q", err, path, tc.wantErr)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(string(b)) {
				t.Fatalf("link.key holds %q afterwards", b)
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm()&0o077 != 0 {
				t.Fatalf("link.key mode %v (%v), want owner-only", fi.Mode(), err)
			}
			left, _ := filepath.Glob(filepath.Join(dir, ".link.key-*"))
			if len(left) != 0 {
				t.Fatalf("temporary files left: %v", left)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
