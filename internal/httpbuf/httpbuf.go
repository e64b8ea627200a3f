// Package httpbuf holds an http.ResponseWriter that keeps the whole
// response in memory, for the two places that must see a handler's answer
// before sending it: the API's rewrite of the mux's own fallback answers,
// and the API Gateway adapter, which returns the response as a value.
package httpbuf

import (
	"bytes"
	"net/http"
)

// Response records a handler's response. The first WriteHeader wins, as
// on a real connection; a Write without one is a 200. Flush is a no-op:
// nothing leaves before the handler returns.
type Response struct {
	header http.Header
	// Status is the status written, 0 when the handler wrote nothing.
	Status int
	Body   bytes.Buffer
}

// New returns an empty Response.
func New() *Response { return &Response{header: http.Header{}} }

// Header implements http.ResponseWriter.
func (r *Response) Header() http.Header { return r.header }

// WriteHeader implements http.ResponseWriter.
func (r *Response) WriteHeader(code int) {
	if r.Status == 0 {
		r.Status = code
	}
}

// Write implements http.ResponseWriter.
func (r *Response) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.Body.Write(p)
}

// Flush implements http.Flusher.
func (r *Response) Flush() {}
