package fs_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/kernel/artifact"
)

// recorder keeps the operations a Store traced, paths relative to its root.
type recorder struct {
	mu   sync.Mutex
	root string
	ops  []string
}

func (r *recorder) note(op, path string) {
	rel, _ := filepath.Rel(r.root, path)
	rel = filepath.ToSlash(rel)
	if dir, base := filepath.Split(rel); strings.HasPrefix(base, ".put-") {
		rel = dir + ".put-*" // a temp file's random name
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op+" "+rel)
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.ops
	r.ops = nil
	return out
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestPutSyncsWhatItChanged pins, in order, the writes and fsyncs each Put
// makes: the content durable (file, link, its shard directory and, for a
// new shard, the shard's entry) before the key exists (a link to the
// object, or for big content a pointer file), then the
// pointer's directory and every directory on its way to the root that
// this Store does not know to be durable — no more. A reopened Store knows
// nothing yet and syncs the whole chain once. (The first content's shard
// is synced again on reopen, and no other: the Store only knows what it
// synced itself.)
func TestPutSyncsWhatItChanged(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := []byte("content a"), []byte("content b")
	if hexSum(a)[:2] == hexSum(b)[:2] {
		t.Fatal("test contents share a shard; pick others")
	}
	obj := func(c []byte) string { return "objects/sha256/" + hexSum(c)[:2] + "/" + hexSum(c) }
	shard := func(c []byte) string { return "objects/sha256/" + hexSum(c)[:2] }
	key := func(cp, name string) artifact.Key { return artifact.Key{RunID: "r", CheckpointID: cp, Name: name} }

	s, err := fs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{root: dir}
	fs.SetTrace(s, rec.note)
	longCP, longName := strings.Repeat("c", 200), strings.Repeat("n", 100)
	big := []byte(strings.Repeat("big content ", 2000)) // 24 KB: over linkMax
	var bigShardNew []string
	if shard(big) != shard(a) && shard(big) != shard(b) {
		bigShardNew = []string{"syncdir objects/sha256"}
	}
	steps := []struct {
		name   string
		reopen bool
		key    artifact.Key
		data   []byte
		want   []string
	}{
		{name: "first put of a run", key: key("c1", "n1"), data: a, want: []string{
			"syncfile " + shard(a) + "/.put-*", "link " + obj(a), "syncdir " + shard(a), "syncdir objects/sha256",
			"link runs/r/c1~n1", "syncdir runs/r", "syncdir runs",
		}},
		{name: "same content, new name", key: key("c1", "n2"), data: a, want: []string{
			"link runs/r/c1~n2", "syncdir runs/r",
		}},
		{name: "new content, new checkpoint", key: key("c2", "n1"), data: b, want: []string{
			"syncfile " + shard(b) + "/.put-*", "link " + obj(b), "syncdir " + shard(b), "syncdir objects/sha256",
			"link runs/r/c2~n1", "syncdir runs/r",
		}},
		{name: "content too big to link: a pointer file", key: key("c2", "big"), data: big, want: append(append([]string{
			"syncfile " + shard(big) + "/.put-*", "link " + obj(big), "syncdir " + shard(big)}, bigShardNew...),
			"syncfile runs/r/.put-*", "link runs/r/c2~big", "syncdir runs/r",
		)},
		{name: "same key, same content", key: key("c2", "n1"), data: b, want: []string{
			"syncdir runs/r",
		}},
		{name: "a key too long for one file name: the nested path", key: key(longCP, longName), data: a, want: []string{
			"link runs/r/checkpoints/" + longCP + "/" + longName,
			"syncdir runs/r/checkpoints/" + longCP, "syncdir runs/r/checkpoints", "syncdir runs/r",
		}},
		{name: "reopened: existing content, existing run", reopen: true, key: key("c1", "n3"), data: a, want: []string{
			"syncdir " + shard(a), "syncdir objects/sha256",
			"link runs/r/c1~n3", "syncdir runs/r", "syncdir runs",
		}},
	}
	for _, st := range steps {
		if st.reopen {
			if s, err = fs.New(dir); err != nil {
				t.Fatal(err)
			}
			fs.SetTrace(s, rec.note)
		}
		before := s.Syncs()
		if _, err := s.Put(ctx, st.key, st.data); err != nil {
			t.Fatalf("%s: Put: %v", st.name, err)
		}
		got := rec.take()
		if !slices.Equal(got, st.want) {
			t.Fatalf("%s:\n got  %q\n want %q", st.name, got, st.want)
		}
		after := s.Syncs()
		syncs := 0
		for _, op := range st.want {
			if strings.HasPrefix(op, "sync") {
				syncs++
			}
		}
		if n := int(after.Files + after.Dirs - before.Files - before.Dirs); n != syncs {
			t.Fatalf("%s: Syncs counted %d fsyncs, the trace shows %d", st.name, n, syncs)
		}
	}
}
