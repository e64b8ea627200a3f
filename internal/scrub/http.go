package scrub

import (
	"mime"
	"net/http"
	"strings"
)

// Middleware masks every secret in the text responses of next: JSON,
// text/* and Server-Sent Events, Write by Write (each is a whole JSON
// document or SSE event in Keel's API). Other bodies — artifacts, whose
// bytes are bound by their sha256, and debug bundles, masked when they
// are built — pass as they are. A masked body is not given a
// Content-Length: the handlers that set one serve binary content.
func (s Secrets) Middleware(next http.Handler) http.Handler {
	if s.r == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&responseWriter{ResponseWriter: w, s: s}, r)
	})
}

type responseWriter struct {
	http.ResponseWriter
	s       Secrets
	decided bool
	text    bool
}

func (w *responseWriter) decide() {
	if w.decided {
		return
	}
	w.decided = true
	mt, _, _ := mime.ParseMediaType(w.Header().Get("Content-Type"))
	w.text = mt == "" || strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json")
	if w.text {
		w.Header().Del("Content-Length")
	}
}

func (w *responseWriter) WriteHeader(code int) {
	w.decide()
	w.ResponseWriter.WriteHeader(code)
}

// Write reports len(p) when the masked bytes were all written.
func (w *responseWriter) Write(p []byte) (int, error) {
	w.decide()
	if !w.text {
		return w.ResponseWriter.Write(p)
	}
	if _, err := w.ResponseWriter.Write(w.s.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush lets an SSE handler flush through the wrapper.
func (w *responseWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
