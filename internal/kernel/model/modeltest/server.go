package modeltest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Reply is one scripted answer of the server, consumed in order, one per
// request.
type Reply struct {
	// Fixture names a recorded stream; its frames are written in order,
	// each flushed.
	Fixture string
	// Frames, when positive, writes only that many frames of the fixture.
	Frames int
	// Stall blocks after the frames (or before any header when there is no
	// fixture) until the client gives up and its request context ends.
	Stall bool
	// Abort cuts the connection after the frames instead of ending the
	// response cleanly: the client reads an unexpected EOF.
	Abort bool

	// Status, when set, answers with that HTTP status, Header and Body
	// instead of a stream.
	Status int
	Header map[string]string
	Body   string
}

// Wire is how a provider frames its stream.
type Wire struct {
	// ContentType of a stream response.
	ContentType string
	// RequestIDHeader is where the provider puts its request id; the
	// server answers every request with req_001, req_002...
	RequestIDHeader string
	// Frames loads a fixture as the byte frames the server writes.
	Frames func(name string) ([][]byte, error)
}

// Request is a request the server received.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// Server replays Replies in a provider's wire format.
type Server struct {
	*httptest.Server
	t    testing.TB
	wire Wire

	mu       sync.Mutex
	replies  []Reply
	requests []Request
}

// NewServer starts a server that answers its requests with replies, in
// order. It is closed when the test ends.
func NewServer(t testing.TB, wire Wire, replies ...Reply) *Server {
	s := &Server{t: t, wire: wire, replies: replies}
	s.Server = httptest.NewServer(s)
	t.Cleanup(s.Close)
	return s
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	var rep Reply
	ok := n < len(s.replies)
	if ok {
		rep = s.replies[n]
	}
	s.mu.Unlock()
	if !ok {
		s.t.Errorf("modeltest: request %d has no scripted reply", n+1)
		http.Error(w, "no scripted reply", http.StatusTeapot)
		return
	}

	w.Header().Set(s.wire.RequestIDHeader, fmt.Sprintf("req_%03d", n+1))
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	if rep.Status != 0 {
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(rep.Status)
		_, _ = io.WriteString(w, rep.Body)
		return
	}
	if rep.Fixture == "" && rep.Stall {
		<-r.Context().Done()
		return
	}
	frames, err := s.wire.Frames(rep.Fixture)
	if err != nil {
		s.t.Errorf("modeltest: fixture %q: %v", rep.Fixture, err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if rep.Frames > 0 && rep.Frames < len(frames) {
		frames = frames[:rep.Frames]
	}
	w.Header().Set("Content-Type", s.wire.ContentType)
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	for _, f := range frames {
		if _, err := w.Write(f); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	if rep.Stall {
		<-r.Context().Done()
		return
	}
	if rep.Abort {
		// net/http closes the connection without ending the chunked body.
		panic(http.ErrAbortHandler)
	}
}

// SSEFrames loads dir/name.sse and splits it into server-sent events, one
// frame per event (its trailing blank line included). A file that does not
// end in a blank line keeps its last, partial event as the last frame:
// that is how a cut stream is recorded.
func SSEFrames(dir string) func(name string) ([][]byte, error) {
	return func(name string) ([][]byte, error) {
		data, err := os.ReadFile(filepath.Join(dir, name+".sse"))
		if err != nil {
			return nil, err
		}
		data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
		var frames [][]byte
		for len(data) > 0 {
			i := bytes.Index(data, []byte("\n\n"))
			if i < 0 {
				frames = append(frames, data)
				break
			}
			frames = append(frames, data[:i+2])
			data = data[i+2:]
		}
		return frames, nil
	}
}
