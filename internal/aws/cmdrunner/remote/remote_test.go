package remote_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/keelrun/keel/internal/kernel/workspace"
	"github.com/keelrun/keel/internal/runspace"
	"github.com/keelrun/keel/internal/sandbox"
)

// TestCommandRunner drives the worker's side (runspace with the Remote
// client) against the runner's real binary under aws-lambda-rie, with S3
// and Lambda on moto: one emulated world, one subtest per fact.
func TestCommandRunner(t *testing.T) {
	w := newWorld(t)
	t.Run("edits come back as a new version", w.testEdits)
	t.Run("the tenant is the run", w.testTenant)
	t.Run("the command's environment holds no credential", w.testEnvironment)
	t.Run("a corrupt blob is a clear error", w.testCorruptBlob)
	t.Run("limits stop the command", w.testLimits)
	t.Run("network is refused naming the field", w.testNetwork)
}

func (w *world) testEdits(t *testing.T) {
	ctx := context.Background()
	m := w.manager(t, sandbox.Policy{})
	tree, err := m.Open(ctx, "run-edits", "")
	if err != nil {
		t.Fatal(err)
	}
	write(t, tree, "src/a.txt", "alpha\n")
	write(t, tree, "keep.txt", "unchanged\n")
	res, err := tree.Exec(ctx, []string{"sh", "-c", "cat src/a.txt > b.txt && echo beta >> src/a.txt && mkdir -p out && printf built > out/bin && ln -s out/bin link && echo done"})
	if err != nil {
		t.Fatalf("exec: %v (stderr %q)", err, res.Stderr)
	}
	if res.ExitCode != 0 || string(res.Stdout) != "done\n" {
		t.Fatalf("exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	for name, want := range map[string]string{"b.txt": "alpha\n", "src/a.txt": "alpha\nbeta\n", "out/bin": "built", "keep.txt": "unchanged\n"} {
		if got := read(t, tree, name); got != want {
			t.Errorf("%s here after the command = %q, want %q", name, got, want)
		}
	}
	if target, err := os.Readlink(tree.Dir() + "/link"); err != nil || target != "out/bin" {
		t.Errorf("link = %q, %v", target, err)
	}
	after := tree.Version()
	if after == "" || !tree.Touched() {
		t.Fatalf("version %q touched %v: the command's tree must be the next checkpoint's", after, tree.Touched())
	}
	// The checkpoint records exactly the runner's version, and puts nothing
	// again: the runner's blobs are already the run's.
	v, err := tree.Snapshot(ctx)
	if err != nil || v != after {
		t.Fatalf("checkpoint version %q, %v; the command left %q", v, err, after)
	}
	// Any other worker restores it from the store alone.
	other := w.manager(t, sandbox.Policy{})
	t2, err := other.Open(ctx, "run-edits", v)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, t2, "src/a.txt"); got != "alpha\nbeta\n" {
		t.Fatalf("another worker restored %q", got)
	}
	// A second command starts from the first one's tree.
	res, err = tree.Exec(ctx, []string{"cat", "b.txt", "out/bin"})
	if err != nil || string(res.Stdout) != "alpha\nbuilt" {
		t.Fatalf("second command: %q, %v", res.Stdout, err)
	}
}

func (w *world) testTenant(t *testing.T) {
	ctx := context.Background()
	tree, err := w.manager(t, sandbox.Policy{}).Open(ctx, "run-tenant-7", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.Exec(ctx, []string{"true"}); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	last := w.tenants[len(w.tenants)-1]
	w.mu.Unlock()
	if last != "run-tenant-7" {
		t.Fatalf("X-Amz-Tenant-Id = %q, want the run id", last)
	}
}

func (w *world) testEnvironment(t *testing.T) {
	ctx := context.Background()
	// The runner process itself has the canary credentials...
	found := false
	for _, pid := range w.runner.Pids()[1:] {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err == nil && bytes.Contains(b, []byte(canarySecret)) {
			found = true
		}
	}
	if !found {
		t.Fatal("the runner's process has no canary credentials: this test would prove nothing")
	}
	// ...and the command sees none of them, nor any AWS_ variable.
	tree, err := w.manager(t, sandbox.Policy{}).Open(ctx, "run-env", "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := tree.Exec(ctx, []string{"sh", "-c", "env; echo ---; cat /proc/$PPID/environ /proc/1/environ 2>&1; for p in /proc/[0-9]*; do cat $p/environ 2>/dev/null; done"})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout) + string(res.Stderr)
	for _, bad := range []string{canaryKey, canarySecret, "canary-token", "AWS_"} {
		if strings.Contains(out, bad) {
			t.Fatalf("the command saw %q:\n%s", bad, out)
		}
	}
	if !strings.Contains(out, "PATH=") {
		t.Fatalf("env printed nothing (the test would prove nothing):\n%s", out)
	}
}

func (w *world) testCorruptBlob(t *testing.T) {
	ctx := context.Background()
	m := w.manager(t, sandbox.Policy{})
	tree, err := m.Open(ctx, "run-corrupt", "")
	if err != nil {
		t.Fatal(err)
	}
	write(t, tree, "data.csv", "a,b\n1,2\n")
	v, err := tree.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The stored blob is replaced behind Keel's back (same key, same
	// sha256 metadata, other bytes).
	sum := sha256.Sum256([]byte("a,b\n1,2\n"))
	key := workspace.BlobKey(workspace.Entry{Run: "run-corrupt", SHA256: hex.EncodeToString(sum[:])}).Path()
	if _, err := w.s3.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		Body: strings.NewReader("a,b\n6,6\n"), Metadata: map[string]string{"sha256": hex.EncodeToString(sum[:])}}); err != nil {
		t.Fatal(err)
	}
	_, err = tree.Exec(ctx, []string{"cat", "data.csv"})
	if !errors.Is(err, workspace.ErrBlob) || !strings.Contains(err.Error(), "data.csv") {
		t.Fatalf("err = %v, want workspace.ErrBlob naming data.csv", err)
	}
	if tree.Version() != v {
		t.Fatalf("a failed command moved the tree to %q", tree.Version())
	}
}

func (w *world) testLimits(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		policy sandbox.Policy
		argv   []string
		reason sandbox.Reason
	}{
		{"output", sandbox.Policy{MaxOutputBytes: 4096}, []string{"sh", "-c", "echo partial > f; yes"}, sandbox.Output},
		{"wall time", sandbox.Policy{WallTime: time.Second}, []string{"sh", "-c", "echo partial > f; sleep 60"}, sandbox.WallTime},
		{"file size", sandbox.Policy{MaxFileBytes: 1 << 16}, []string{"sh", "-c", "echo partial > f; head -c 1000000 /dev/zero > big"}, sandbox.FileSize},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tree, err := w.manager(t, c.policy).Open(ctx, "run-limit", "")
			if err != nil {
				t.Fatal(err)
			}
			res, err := tree.Exec(ctx, c.argv)
			var le *sandbox.LimitError
			if !errors.As(err, &le) || le.Reason != c.reason || !errors.Is(err, sandbox.ErrLimit) {
				t.Fatalf("err = %v (result %+v), want a LimitError %s", err, res.Reason, c.reason)
			}
			// What it wrote before the limit is in the tree, as locally.
			if got := read(t, tree, "f"); got != "partial\n" {
				t.Fatalf("f = %q", got)
			}
		})
	}
}

func (w *world) testNetwork(t *testing.T) {
	ctx := context.Background()
	tree, err := w.manager(t, sandbox.Policy{AllowHosts: []string{"api.example.com"}}).Open(ctx, "run-net", "")
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	before := len(w.tenants)
	w.mu.Unlock()
	_, err = tree.Exec(ctx, []string{"true"})
	if !errors.Is(err, sandbox.ErrSetup) || !strings.Contains(err.Error(), "AllowHosts") {
		t.Fatalf("err = %v, want ErrSetup naming AllowHosts", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.tenants) != before {
		t.Fatal("the runner was invoked for a command with network")
	}
}

func write(t *testing.T, tree *runspace.Tree, name, data string) {
	t.Helper()
	d, err := tree.Files()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Write(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, tree *runspace.Tree, name string) string {
	t.Helper()
	d, err := tree.Files()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	b, err := d.Read(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
