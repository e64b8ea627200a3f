package artifacttest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/keelrun/keel/internal/kernel/artifact"
)

// Backend is a fresh store under test and its corruption hook.
type Backend struct {
	Store artifact.Store
	// Corrupt changes the stored content of k (which exists) without
	// updating the hash the store recorded for it.
	Corrupt func(t *testing.T, k artifact.Key)
}

// Run runs the whole suite. open is called once per subtest and must
// return an empty store; cleanup belongs in t.Cleanup.
func Run(t *testing.T, open func(t *testing.T) Backend) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, b Backend)
	}{
		{"PutReturnsHashAndSize", testPutReturnsHashAndSize},
		{"GetRoundTrip", testGetRoundTrip},
		{"SameContentIsNoop", testSameContentIsNoop},
		{"OtherContentIsErrExists", testOtherContentIsErrExists},
		{"ConcurrentPutsOneWinner", testConcurrentPutsOneWinner},
		{"ListByRunOrdered", testListByRunOrdered},
		{"InvalidKeys", testInvalidKeys},
		{"NotFound", testNotFound},
		{"CorruptionDetected", testCorruptionDetected},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := open(t)
			if b.Store == nil {
				t.Fatal("open returned no store")
			}
			tc.fn(t, b)
		})
	}
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func key(run, cp, name string) artifact.Key {
	return artifact.Key{RunID: run, CheckpointID: cp, Name: name}
}

// allBytes is content no text-only path would carry intact.
func allBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

func testPutReturnsHashAndSize(t *testing.T, b Backend) {
	ctx := context.Background()
	cases := []struct {
		name string
		data []byte
	}{
		{"text", []byte("hello, keel")},
		{"empty", []byte{}},
		{"binary", allBytes(4096)},
		{"large", allBytes(3 << 20)},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := key("run_a", "cp_1", fmt.Sprintf("blob-%d", i))
			info, err := b.Store.Put(ctx, k, c.data)
			if err != nil {
				t.Fatalf("Put: %v", err)
			}
			if info.SHA256 != sum(c.data) {
				t.Errorf("SHA256 = %s, want %s", info.SHA256, sum(c.data))
			}
			if info.Size != int64(len(c.data)) {
				t.Errorf("Size = %d, want %d", info.Size, len(c.data))
			}
			if info.Key != k {
				t.Errorf("Key = %+v, want %+v", info.Key, k)
			}
		})
	}
}

func testGetRoundTrip(t *testing.T, b Backend) {
	ctx := context.Background()
	data := allBytes(100_000)
	k := key("run_a", "cp_1", "state.bin")
	if _, err := b.Store.Put(ctx, k, data); err != nil {
		t.Fatalf("Put: %v", err)
	}
	got, info, err := b.Store.Get(ctx, k)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("Get returned %d bytes that differ from the %d put", len(got), len(data))
	}
	if info.SHA256 != sum(data) || info.Size != int64(len(data)) || info.Key != k {
		t.Fatalf("Get info = %+v", info)
	}
	empty := key("run_a", "cp_1", "empty")
	if _, err := b.Store.Put(ctx, empty, nil); err != nil {
		t.Fatalf("Put empty: %v", err)
	}
	got, info, err = b.Store.Get(ctx, empty)
	if err != nil || len(got) != 0 || info.Size != 0 || info.SHA256 != sum(nil) {
		t.Fatalf("Get empty = %q, %+v, %v", got, info, err)
	}
}

func testSameContentIsNoop(t *testing.T, b Backend) {
	ctx := context.Background()
	k := key("run_a", "cp_1", "report.md")
	data := []byte("# report\n")
	first, err := b.Store.Put(ctx, k, data)
	if err != nil {
		t.Fatalf("first Put: %v", err)
	}
	second, err := b.Store.Put(ctx, k, bytes.Clone(data))
	if err != nil {
		t.Fatalf("second Put of the same content: %v", err)
	}
	if first != second {
		t.Fatalf("second Put info %+v differs from first %+v", second, first)
	}
	list, err := b.Store.List(ctx, "run_a")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(list) != 1 {
		t.Fatalf("List has %d entries after two identical puts, want 1", len(list))
	}
}

func testOtherContentIsErrExists(t *testing.T, b Backend) {
	ctx := context.Background()
	k := key("run_a", "cp_1", "report.md")
	orig := []byte("original")
	if _, err := b.Store.Put(ctx, k, orig); err != nil {
		t.Fatalf("Put: %v", err)
	}
	for _, other := range [][]byte{[]byte("changed!"), []byte("original plus more"), {}} {
		if _, err := b.Store.Put(ctx, k, other); !errors.Is(err, artifact.ErrExists) {
			t.Fatalf("Put of other content %q: err = %v, want ErrExists", other, err)
		}
	}
	got, info, err := b.Store.Get(ctx, k)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if !bytes.Equal(got, orig) || info.SHA256 != sum(orig) {
		t.Fatalf("stored blob changed to %q (%s)", got, info.SHA256)
	}
}

func testConcurrentPutsOneWinner(t *testing.T, b Backend) {
	ctx := context.Background()
	k := key("run_a", "cp_1", "contended")
	const n = 8
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins []int
		errs []error
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.Store.Put(ctx, k, fmt.Appendf(nil, "writer %d", i))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins = append(wins, i)
			case errors.Is(err, artifact.ErrExists):
			default:
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("unexpected errors: %v", errs)
	}
	if len(wins) != 1 {
		t.Fatalf("%d writers succeeded with different content at one key, want exactly 1", len(wins))
	}
	got, _, err := b.Store.Get(ctx, k)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if want := fmt.Sprintf("writer %d", wins[0]); string(got) != want {
		t.Fatalf("stored %q, but the winner wrote %q", got, want)
	}
}

func testListByRunOrdered(t *testing.T, b Backend) {
	ctx := context.Background()
	// run_1 and run_10 share a string prefix: List must not mix them.
	puts := []artifact.Key{
		key("run_1", "cp_b", "z"), key("run_1", "cp_a", "b"), key("run_1", "cp_a", "a"),
		key("run_10", "cp_a", "a"), key("run_2", "cp_a", "a"),
	}
	// Enough blobs to cross a small page size in backends that page.
	for i := range 23 {
		puts = append(puts, key("run_1", "cp_c", fmt.Sprintf("n%02d", i)))
	}
	for _, k := range puts {
		if _, err := b.Store.Put(ctx, k, []byte(k.Path())); err != nil {
			t.Fatalf("Put %s: %v", k.Path(), err)
		}
	}
	list, err := b.Store.List(ctx, "run_1")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var want []string
	for _, k := range puts {
		if k.RunID == "run_1" {
			want = append(want, k.Path())
		}
	}
	slices.Sort(want)
	if len(list) != len(want) {
		t.Fatalf("List returned %d blobs, want %d", len(list), len(want))
	}
	for i, info := range list {
		if info.Key.Path() != want[i] {
			t.Fatalf("List[%d] = %s, want %s", i, info.Key.Path(), want[i])
		}
		if info.SHA256 != sum([]byte(want[i])) || info.Size != int64(len(want[i])) {
			t.Fatalf("List[%d] info = %+v", i, info)
		}
	}
	none, err := b.Store.List(ctx, "run_none")
	if err != nil || len(none) != 0 {
		t.Fatalf("List of a run without blobs = %v, %v; want empty, nil", none, err)
	}
}

func testInvalidKeys(t *testing.T, b Backend) {
	ctx := context.Background()
	bad := []struct {
		name string
		k    artifact.Key
	}{
		{"empty run", key("", "cp", "n")},
		{"empty checkpoint", key("r", "", "n")},
		{"empty name", key("r", "cp", "")},
		{"slash in name", key("r", "cp", "a/b")},
		{"dot dot run", key("..", "cp", "n")},
		{"dot checkpoint", key("r", ".", "n")},
		{"backslash", key("r", "cp", `a\b`)},
		{"nul", key("r", "cp", "a\x00b")},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			if _, err := b.Store.Put(ctx, c.k, []byte("x")); !errors.Is(err, artifact.ErrInvalid) {
				t.Errorf("Put: err = %v, want ErrInvalid", err)
			}
			if _, _, err := b.Store.Get(ctx, c.k); !errors.Is(err, artifact.ErrInvalid) {
				t.Errorf("Get: err = %v, want ErrInvalid", err)
			}
		})
	}
	for _, runID := range []string{"", "..", "a/b"} {
		if _, err := b.Store.List(ctx, runID); !errors.Is(err, artifact.ErrInvalid) {
			t.Errorf("List(%q): err = %v, want ErrInvalid", runID, err)
		}
	}
	// Nothing invalid may have been stored under a neighbouring valid key.
	if list, err := b.Store.List(ctx, "r"); err != nil || len(list) != 0 {
		t.Errorf("List(r) after invalid puts = %v, %v; want empty", list, err)
	}
}

func testNotFound(t *testing.T, b Backend) {
	ctx := context.Background()
	if _, _, err := b.Store.Get(ctx, key("run_a", "cp_1", "missing")); !errors.Is(err, artifact.ErrNotFound) {
		t.Fatalf("Get of a missing key: err = %v, want ErrNotFound", err)
	}
	if _, err := b.Store.Put(ctx, key("run_a", "cp_1", "present"), []byte("x")); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if _, _, err := b.Store.Get(ctx, key("run_a", "cp_1", "presen")); !errors.Is(err, artifact.ErrNotFound) {
		t.Fatalf("Get of a key prefix: err = %v, want ErrNotFound", err)
	}
}

func testCorruptionDetected(t *testing.T, b Backend) {
	if b.Corrupt == nil {
		t.Fatal("backend has no corruption hook")
	}
	ctx := context.Background()
	k := key("run_a", "cp_1", "state")
	data := allBytes(70_000)
	if _, err := b.Store.Put(ctx, k, data); err != nil {
		t.Fatalf("Put: %v", err)
	}
	b.Corrupt(t, k)
	got, _, err := b.Store.Get(ctx, k)
	if !errors.Is(err, artifact.ErrCorrupt) {
		t.Fatalf("Get after corruption: err = %v, want ErrCorrupt", err)
	}
	if got != nil {
		t.Fatalf("Get after corruption returned %d bytes; corrupted data must never be returned", len(got))
	}
}
