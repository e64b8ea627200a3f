package fs_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/kernel/artifact"
)

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkResearchRunPuts is what one research run asks of the store: its
// report (the same content in every run of bench/load) under one
// checkpoint and its audit head (its own content) under another, in a new
// run. It reports the CPU and the fsyncs each run costs:
//
//	go test -run XXX -bench ResearchRunPuts -benchtime 300x ./internal/backend/artifact/fs/
func BenchmarkResearchRunPuts(b *testing.B) {
	ctx := context.Background()
	s, err := fs.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	report := []byte("# the report\n\nthe same in every run, as the scripted model writes it\n")
	syncs0, cpu0 := s.Syncs(), cpuTime(b)
	for i := 0; b.Loop(); i++ {
		run := fmt.Sprintf("run_%08d", i)
		if _, err := s.Put(ctx, artifact.Key{RunID: run, CheckpointID: "cp_a", Name: "report.md"}, report); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Put(ctx, artifact.Key{RunID: run, CheckpointID: "cp_b", Name: "audit-head.json"}, []byte(run)); err != nil {
			b.Fatal(err)
		}
	}
	syncs := s.Syncs()
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N)/1e3, "cpu-µs/run")
	b.ReportMetric(float64(syncs.Files+syncs.Dirs-syncs0.Files-syncs0.Dirs)/float64(b.N), "fsyncs/run")
}
