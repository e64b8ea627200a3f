package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// wantsStream reports whether the client asked for Server-Sent Events.
func wantsStream(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/event-stream" {
			return true
		}
	}
	return false
}

// events serves GET /v1/runs/{id}/events: a JSON page, or with
// Accept: text/event-stream a live stream.
func (s *server) events(w http.ResponseWriter, r *http.Request, principal string) {
	after, e := queryInt(r, "after", 0, 0, 1<<62)
	if e != nil {
		writeError(w, e)
		return
	}
	limit, e := queryInt(r, "limit", 100, 1, store.MaxEventsPerPage)
	if e != nil {
		writeError(w, e)
		return
	}
	stream := wantsStream(r)
	if v := r.Header.Get("Last-Event-ID"); v != "" && stream {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, badField(CodeInvalidField, "Last-Event-ID", "Last-Event-ID must be an event seq (a non-negative integer)"))
			return
		}
		after = n
	}
	rr, ok := s.pathRun(w, r, principal)
	if !ok {
		return
	}
	if stream {
		if !s.streams.acquire(principal) {
			writeError(w, &Error{Status: http.StatusTooManyRequests, Code: CodeTooManyStreams,
				Message: fmt.Sprintf("this principal already has %d event streams open; close one first", s.streams.max)})
			return
		}
		defer s.streams.release(principal)
		s.stream(w, r, rr, after)
		return
	}
	evs, err := s.store.ReadEvents(r.Context(), rr.ID, after, int(limit))
	if err != nil {
		s.fail(w, r, "run", err)
		return
	}
	page := EventPage{Events: make([]Event, 0, len(evs)), NextAfter: after, Status: rr.Status}
	for _, ev := range evs {
		page.Events = append(page.Events, eventView(ev))
		page.NextAfter = ev.Seq
	}
	// rr was read before the events: if it was terminal then, its log was
	// complete then.
	page.Done = rr.Status.Terminal() && page.NextAfter >= rr.LastSeq
	writeJSON(w, http.StatusOK, page)
}

// stream sends the run's events after cursor as Server-Sent Events (id =
// seq, event = type, data = the Event as JSON), reading the store when the
// notifier says the run's log grew and every poll interval, until
// the run is terminal and every event is sent; then an "end" event. It
// sends a comment line when silent for KeepAlive, and ends early with a
// retry hint after MaxStreamDuration (the client resumes with
// Last-Event-ID).
func (s *server) stream(w http.ResponseWriter, r *http.Request, rr run.Run, cursor int64) {
	ctx := r.Context()
	sse := &sseConn{s: s, ctx: ctx, rc: http.NewResponseController(w)}
	sse.extend()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx and friends: do not buffer
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriter(w)
	sse.bw = bw
	flush := sse.flush
	fmt.Fprintf(bw, "retry: %d\n\n", min(s.poll.Milliseconds()*4, 1000))
	if flush() != nil {
		return
	}
	started := time.Now()
	lastWrite := started
	tick := time.NewTicker(s.poll)
	defer tick.Stop()
	var wake <-chan struct{} // nil without a notifier: never ready
	if s.notifier != nil {
		ch, unsubscribe := s.notifier.Subscribe(rr.ID)
		defer unsubscribe()
		wake = ch
	}
	first := true
	for {
		if !first {
			// Status first, events second: if the run was terminal when
			// read, every event it will ever have is already stored.
			var err error
			if rr, err = s.store.GetRun(ctx, rr.ID); err != nil {
				s.streamFailed(bw, r, err)
				return
			}
		}
		first = false
		var err error
		if cursor, err = s.writeEvents(ctx, bw, rr.ID, cursor, &lastWrite); err != nil {
			s.streamFailed(bw, r, err)
			return
		}
		if rr.Status.Terminal() && cursor >= rr.LastSeq {
			// cursor may be a Last-Event-ID beyond the log: the end names
			// the log's own last seq, never an echo of the client's.
			data, _ := json.Marshal(StreamEnd{Status: rr.Status, LastSeq: min(cursor, rr.LastSeq)})
			fmt.Fprintf(bw, "event: end\ndata: %s\n\n", data)
			_ = flush()
			return
		}
		if s.maxStream > 0 && time.Since(started) >= s.maxStream {
			_ = flush() // the client reconnects after the retry delay, from Last-Event-ID
			return
		}
		if time.Since(lastWrite) >= s.keepAlive {
			bw.WriteString(": keepalive\n\n")
			lastWrite = time.Now()
		}
		if flush() != nil {
			return // the client is gone
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-wake:
		}
	}
}

// sseConn is the connection of one event stream. A server-wide
// WriteTimeout would cut a long stream: each write gets its own deadline
// instead (a client that stops reading is cut after streamWriteTimeout),
// and the stream is bounded by MaxStreamDuration.
type sseConn struct {
	s   *server
	ctx context.Context
	rc  *http.ResponseController
	bw  *bufio.Writer
}

// extend moves the write deadline to streamWriteTimeout from now.
func (c *sseConn) extend() {
	if err := c.rc.SetWriteDeadline(time.Now().Add(c.s.streamWriteTimeout())); err != nil && !errors.Is(err, http.ErrNotSupported) {
		c.s.log.DebugContext(c.ctx, "sse: extending the write deadline", "err", err)
	}
}

// flush sends what is buffered to the client now, under a new deadline.
func (c *sseConn) flush() error {
	c.extend()
	if err := c.bw.Flush(); err != nil {
		return err
	}
	if err := c.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// writeEvents writes the run's events after cursor to bw as SSE
// messages, page by page until a short page, and returns the new cursor.
// It sets *lastWrite when a page had events.
func (s *server) writeEvents(ctx context.Context, bw *bufio.Writer, runID string, cursor int64, lastWrite *time.Time) (int64, error) {
	for {
		evs, err := s.store.ReadEvents(ctx, runID, cursor, store.MaxEventsPerPage)
		if err != nil {
			return cursor, err
		}
		for _, ev := range evs {
			data, _ := json.Marshal(eventView(ev)) // fields are plain values and a validated RawMessage
			fmt.Fprintf(bw, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, sseToken(string(ev.Type)), data)
			cursor = ev.Seq
		}
		if len(evs) > 0 {
			*lastWrite = time.Now()
		}
		if len(evs) < store.MaxEventsPerPage {
			return cursor, nil
		}
	}
}

// streamWriteTimeout is how long after a flush the stream's next writes
// may take: a stream writes again within a keepalive interval and a poll
// of its last flush, so only a client that stopped reading hits it.
func (s *server) streamWriteTimeout() time.Duration {
	return time.Minute + 2*s.keepAlive + s.poll
}

// streamFailed ends a stream whose headers are sent: the failure goes to the
// log and the client gets a generic "error" event.
func (s *server) streamFailed(bw *bufio.Writer, r *http.Request, err error) {
	if clientGone(r.Context(), err) {
		return
	}
	s.log.ErrorContext(r.Context(), "sse: reading the store", "path", r.URL.Path, "err", err)
	data, _ := json.Marshal(errInternal())
	fmt.Fprintf(bw, "event: error\ndata: %s\n\n", data)
	_ = bw.Flush()
}

// sseToken keeps an event name to one line.
func sseToken(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, s)
}

// streamCounter bounds the open streams of each principal.
type streamCounter struct {
	mu   sync.Mutex
	max  int
	open map[string]int
}

func (c *streamCounter) acquire(principal string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[principal] >= c.max {
		return false
	}
	c.open[principal]++
	return true
}

func (c *streamCounter) release(principal string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[principal]--; c.open[principal] <= 0 {
		delete(c.open, principal)
	}
}
