package main

import (
	"fmt"
	"sync"
	"time"
)

// sampler records the time each iteration count was reached, and memory
// at each mark.
type sampler struct {
	cfg     Config
	start   time.Time
	dbPath  string
	c       *counters
	mu      sync.Mutex
	reached map[int]time.Time
	inModel map[int]int64 // model nanoseconds when each count was reached
	want    map[int]bool  // the counts whose time a mark needs
	marks   []Mark
	next    int // index in cfg.Marks of the next mark
	profErr error
}

func newSampler(cfg Config, start time.Time, dbPath string, c *counters) *sampler {
	s := &sampler{cfg: cfg, start: start, dbPath: dbPath, c: c,
		reached: map[int]time.Time{}, inModel: map[int]int64{}, want: map[int]bool{}}
	for _, m := range cfg.Marks {
		s.want[m] = true
		if m-cfg.Window > 0 {
			s.want[m-cfg.Window] = true
		}
	}
	s.want[0] = true
	s.reached[0] = start
	return s
}

// run samples every 2ms until stop is closed, then closes sampled.
func (s *sampler) run(stop <-chan struct{}, sampled chan<- struct{}) {
	defer close(sampled)
	for {
		it := int(s.c.calls.Load())
		now := time.Now()
		s.mu.Lock()
		for k := range s.want {
			if _, ok := s.reached[k]; !ok && it >= k {
				s.reached[k], s.inModel[k] = now, s.c.modelNanos.Load()
			}
		}
		for s.next < len(s.cfg.Marks) && it >= s.cfg.Marks[s.next] {
			s.mark(now)
			s.next++
		}
		s.mu.Unlock()
		select {
		case <-stop:
			return
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// mark records the next mark, reached at now: time per iteration over the
// window and since the previous mark, model time, memory, database size.
func (s *sampler) mark(now time.Time) {
	cfg := s.cfg
	m := cfg.Marks[s.next]
	from := max(0, m-cfg.Window)
	ms := float64(now.Sub(s.reached[from]).Microseconds()) / 1000 / float64(m-from)
	modelMs := float64(s.c.modelNanos.Load()-s.inModel[from]) / 1e6 / float64(m-from)
	prev := 0
	if s.next > 0 {
		prev = cfg.Marks[s.next-1]
	}
	decade := float64(now.Sub(s.reached[prev]).Microseconds()) / 1000 / float64(m-prev)
	rss, heap := memory()
	live, goMB := liveHeap()
	if cfg.HeapProfile != "" {
		if err := heapProfile(fmt.Sprintf("%s-%d.pb.gz", cfg.HeapProfile, m)); err != nil {
			s.profErr = err
		}
	}
	size, _ := dbSize(s.dbPath)
	s.marks = append(s.marks, Mark{Iteration: m, MsPerIter: ms, DecadeMsPerIter: decade, ModelMsPerIter: modelMs, KeelMsPerIter: ms - modelMs,
		RSSMB: rss, HeapMB: heap, LiveMB: live, GoMB: goMB, ElapsedSecs: now.Sub(s.start).Seconds(),
		Transcript: 2*m + 1, BytesPerIter: float64(size) / float64(m)})
}
