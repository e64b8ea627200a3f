package sandbox

import (
	"sync"
	"time"
)

// capture keeps up to max bytes of stdout and stderr together and signals
// full once more arrives; it records when the first byte came.
type capture struct {
	mu             sync.Mutex
	max, seen      int64
	stdout, stderr []byte
	start          time.Time
	first          time.Duration
	full           chan struct{}
	fullOnce       sync.Once
}

func newCapture(max int64) *capture {
	return &capture{max: max, full: make(chan struct{})}
}

type captureWriter struct {
	c   *capture
	buf *[]byte
}

func (c *capture) writer(buf *[]byte) captureWriter { return captureWriter{c: c, buf: buf} }

// Write never fails, so the command is never blocked or broken by its
// reader; past the cap it drops the bytes and signals full.
func (w captureWriter) Write(p []byte) (int, error) {
	c := w.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == 0 && len(p) > 0 {
		c.first = time.Since(c.start)
	}
	c.seen += int64(len(p))
	room := c.max - int64(len(c.stdout)+len(c.stderr))
	if room > 0 {
		*w.buf = append(*w.buf, p[:min(int64(len(p)), room)]...)
	}
	if c.seen > c.max {
		c.fullOnce.Do(func() { close(c.full) })
	}
	return len(p), nil
}

func (c *capture) result() Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Result{Stdout: c.stdout, Stderr: c.stderr, Truncated: c.seen > c.max, FirstOutput: c.first}
}
