package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/httpbuf"
	"github.com/keelrun/keel/internal/notify"
)

// authenticate resolves the principal before h runs; without one the
// request ends with 401 and h never sees it. An authenticated request
// whose URL holds a configured secret's value ends with 400
// secret_in_request (refuseSecretInURL); the check comes after
// authentication, so a caller without credentials learns nothing from it.
func (s *server) authenticate(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := s.auth.Principal(r)
		if err != nil || p == "" {
			if err != nil {
				s.log.DebugContext(r.Context(), "unauthenticated request", "path", r.URL.Path, "err", err)
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="keel"`)
			writeError(w, &Error{Status: http.StatusUnauthorized, Code: CodeUnauthorized,
				Message: "missing or invalid credentials"})
			return
		}
		if e := s.refuseSecretInURL(r); e != nil {
			writeError(w, e)
			return
		}
		h(w, r, p)
	}
}

// recoverer turns a handler panic into a logged 500 with a generic body, so
// no panic crosses into net/http (which would drop the connection).
func (s *server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.ErrorContext(r.Context(), "handler panic", "method", r.Method, "path", logPath(r), "panic", fmt.Sprint(v))
				writeError(w, errInternal())
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// statusWriter remembers the status a handler wrote, for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and SetWriteDeadline.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		s.log.InfoContext(r.Context(), "request", "method", r.Method, "path", logPath(r),
			"status", sw.status, "duration", time.Since(start))
	})
}

// jsonFallbacks replaces the mux's plain-text 404 and 405 answers (no
// route for the path; a route, but not for this method) with JSON errors,
// keeping the Allow header.
func (s *server) jsonFallbacks(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		rec := httpbuf.New() // the mux's own fallback answer, rewritten below
		mux.ServeHTTP(rec, r)
		switch rec.Status {
		case http.StatusNotFound:
			writeError(w, &Error{Status: http.StatusNotFound, Code: CodeNotFound,
				Message: "no such endpoint: " + r.URL.Path})
		case http.StatusMethodNotAllowed:
			w.Header().Set("Allow", rec.Header().Get("Allow"))
			writeError(w, &Error{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
				Message: fmt.Sprintf("method %s is not allowed here; allowed: %s", r.Method, rec.Header().Get("Allow"))})
		default: // a redirect to the canonical path, or anything else: pass it on
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Status)
			_, _ = w.Write(rec.Body.Bytes())
		}
	})
}

// clientGone reports whether err only says the client went away, which is
// not worth an error log line.
func clientGone(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// logPath is the request's path as logs show it: an approval link's token
// is a credential, so it is cut off.
func logPath(r *http.Request) string {
	if strings.HasPrefix(r.URL.Path, notify.LinkPath) {
		return notify.LinkPath + "…"
	}
	return r.URL.Path
}
