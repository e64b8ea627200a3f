package workspace

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

const (
	benchFiles    = 100
	benchFileSize = 1 << 20 // 100 files of 1 MiB: a 100 MiB workspace
)

// benchTree writes a 100 MiB tree of incompressible files and snapshots it.
func benchTree(b *testing.B) (*Versioner, *counting, string, Snapshot) {
	b.Helper()
	dir := b.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, benchFileSize)
	for i := range benchFiles {
		for j := range buf {
			buf[j] = byte(rng.Uint32())
		}
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%10), fmt.Sprintf("f%03d.bin", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	art := newStore(b)
	v := NewVersioner(art, Limits{})
	snap, err := v.Snapshot(ctx, "bench", dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	return v, art, dir, snap
}

// BenchmarkSnapshotOneFileChange: bytes a checkpoint writes when one file
// of a 100 MiB workspace changed, and their ratio to the tree.
func BenchmarkSnapshotOneFileChange(b *testing.B) {
	v, art, dir, snap := benchTree(b)
	tree := snap.Manifest.TotalBytes()
	art.reset()
	prev, n := snap.Manifest, 0
	for b.Loop() {
		n++
		p := filepath.Join(dir, "d00", "f000.bin")
		if err := os.WriteFile(p, fmt.Appendf(nil, "edit %d", n), 0o644); err != nil {
			b.Fatal(err)
		}
		s, err := v.Snapshot(ctx, "bench", dir, prev)
		if err != nil {
			b.Fatal(err)
		}
		prev = s.Manifest
	}
	written := float64(art.by[blobsID]+art.by[manifestsID]) / float64(n)
	b.ReportMetric(written, "bytes_written/checkpoint")
	b.ReportMetric(written/float64(tree), "written/tree")
	b.ReportMetric(float64(art.puts[blobsID]+art.puts[manifestsID])/float64(n), "puts/checkpoint")
	b.ReportMetric(float64(tree)/(1<<20), "tree_MiB")
}

// BenchmarkRestore100MiB: restoring the whole workspace on an empty cache.
func BenchmarkRestore100MiB(b *testing.B) {
	v, _, _, snap := benchTree(b)
	b.SetBytes(snap.Manifest.TotalBytes())
	out := b.TempDir()
	i := 0
	for b.Loop() {
		i++
		if _, err := v.Restore(ctx, snap.Version, filepath.Join(out, fmt.Sprint(i))); err != nil {
			b.Fatal(err)
		}
	}
}
