package mcpserve

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/httpbuf"
)

// Path is where the HTTP API serves MCP (streamable HTTP).
const Path = "/v1/mcp"

// maxRequestBytes bounds one MCP request: a start_run's input fits, as in
// the API's own bound.
const maxRequestBytes = api.DefaultMaxBodyBytes

// Mount serves MCP at Path beside the API handler apiHandler; every other
// path goes to apiHandler. A request at Path must authenticate as any API
// request does (auth, the API's own Authenticator), or gets 401 with the
// API's JSON error body before MCP sees it.
//
// The endpoint is stateless with JSON answers (no session, no event
// stream): each request stands alone, so it works the same behind API
// Gateway and a Lambda that may not see the next request, and no process
// holds a client's state. Each tool call is an API request made
// in-process, with the caller's own credentials: the API authorizes it,
// records the caller as the actor, and masks secrets, exactly as when the
// caller uses the API directly.
func Mount(apiHandler http.Handler, auth api.Authenticator, o Options, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mcpHandler := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		principal, _ := auth.Principal(r) // authenticated before: see below
		cl, err := client.New("http://keel.in-process", "", &http.Client{Transport: inProcess{
			h: apiHandler, authorization: r.Header.Get("Authorization"), principal: principal}})
		if err != nil { // a constant, valid URL: cannot happen
			log.Error("mcp: in-process client", "err", err)
			return nil
		}
		return New(cl, o)
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: log})
	mux := http.NewServeMux()
	mux.Handle("/", apiHandler)
	mux.HandleFunc(Path, func(w http.ResponseWriter, r *http.Request) {
		// Logged as the API logs its requests, refusals and failed
		// logins included; the tool calls inside are API requests of
		// their own, logged by the API.
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		w = sw
		defer func() {
			log.InfoContext(r.Context(), "request", "method", r.Method, "path", Path, "status", sw.status, "duration", time.Since(start))
		}()
		if _, err := auth.Principal(r); err != nil {
			writeError(w, http.StatusUnauthorized, api.CodeUnauthorized, "missing or invalid credentials: send the API's bearer token")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxRequestBytes)
		// Answers are JSON and whole (no stream), so they can be held
		// and a refusal the SDK writes as plain text (a malformed body, a
		// GET) sent as the API's JSON error instead.
		rec := httpbuf.New()
		mcpHandler.ServeHTTP(rec, r)
		if rec.Status >= 400 && !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			writeError(w, rec.Status, refusalCode(rec.Status), strings.TrimSpace(rec.Body.String()))
			return
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		if rec.Status != 0 {
			w.WriteHeader(rec.Status)
		}
		_, _ = w.Write(rec.Body.Bytes())
	})
	return mux
}

// statusWriter remembers the status written, for the request log.
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

// refusalCode names an MCP refusal as the API names its errors.
func refusalCode(status int) string {
	switch status {
	case http.StatusMethodNotAllowed:
		return api.CodeMethodNotAllowed
	case http.StatusRequestEntityTooLarge:
		return api.CodeBodyTooLarge
	case http.StatusUnsupportedMediaType, http.StatusNotAcceptable:
		return api.CodeUnsupportedMediaType
	}
	if status >= 500 {
		return api.CodeInternal
	}
	return api.CodeMalformedJSON // what the SDK refuses with a 400: a body that is not a JSON-RPC message
}

// writeError answers with the API's error body.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: &api.Error{Code: code, Message: msg}})
}

// inProcess is an http.RoundTripper that serves a request with the API
// handler itself, as the MCP caller: its Authorization header (bearer
// tokens) and its principal in the context (behind a gateway that
// authenticated it, api.ContextPrincipal).
type inProcess struct {
	h             http.Handler
	authorization string
	principal     string
}

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(api.WithPrincipal(req.Context(), t.principal))
	r.Header.Del("Authorization")
	if t.authorization != "" {
		r.Header.Set("Authorization", t.authorization)
	}
	r.RequestURI = r.URL.RequestURI()
	if r.Body == nil {
		r.Body = http.NoBody
	}
	rec := httpbuf.New()
	t.h.ServeHTTP(rec, r)
	status := rec.Status
	if status == 0 {
		status = http.StatusOK
	}
	return &http.Response{
		StatusCode: status, Status: http.StatusText(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rec.Header(), Body: io.NopCloser(bytes.NewReader(rec.Body.Bytes())),
		ContentLength: int64(rec.Body.Len()), Request: req,
	}, nil
}
