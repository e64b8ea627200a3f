package api

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// Error codes: the stable "code" of an error body.
const (
	CodeMalformedJSON        = "malformed_json"         // 400: the body is not one JSON object
	CodeUnknownField         = "unknown_field"          // 400: the body has a field the endpoint does not take
	CodeWrongType            = "wrong_type"             // 400: a field has the wrong JSON type
	CodeMissingField         = "missing_field"          // 400: a required field or parameter is absent or empty
	CodeInvalidField         = "invalid_field"          // 400: a field or parameter has a value out of its domain
	CodeSecretInRequest      = "secret_in_request"      // 400: the body or the URL holds the value of a secret configured on the deployment
	CodeUnauthorized         = "unauthorized"           // 401
	CodeNotFound             = "not_found"              // 404: unknown id, or not the caller's
	CodeMethodNotAllowed     = "method_not_allowed"     // 405
	CodeBodyTooLarge         = "body_too_large"         // 413
	CodeUnsupportedMediaType = "unsupported_media_type" // 415: a body that is not application/json
	CodeRunFinished          = "run_finished"           // 409: the run is terminal
	CodeArgsHashMismatch     = "args_hash_mismatch"     // 409: the decision names other args than the pending approval
	CodeApprovalNotPending   = "approval_not_pending"   // 409: already decided or cancelled
	CodeInputRejected        = "input_rejected"         // 409: the run's input policy is reject
	CodeInputPolicyRollback  = "input_policy_rollback"  // 409: input under rollback goes through fork
	CodeIdempotencyKeyReused = "idempotency_key_reused" // 409: same key, other request
	CodeTooManyStreams       = "too_many_streams"       // 429: the principal's open event streams are at their cap
	CodeConflict             = "conflict"               // 409: any other refused change
	CodeInternal             = "internal"               // 500
	CodeArtifactCorrupt      = "artifact_corrupt"       // 500: the stored blob fails its hash
	CodeStoreCorrupt         = "store_corrupt"          // 500: the store's own integrity check fails
	CodeStartFailed          = "start_failed"           // 503: the run is stored, its execution did not start
	CodeResumeFailed         = "resume_failed"          // 503: the decision is stored, the wait did not wake
)

// Error is an API error: the HTTP status and the body's fields. Clients
// decode the same type (see ErrorBody).
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func (e *Error) Error() string {
	if e.Field != "" {
		return e.Code + " (" + e.Field + "): " + e.Message
	}
	return e.Code + ": " + e.Message
}

// ErrorBody is the JSON shape of every error response.
type ErrorBody struct {
	Error *Error `json:"error"`
}

func badField(code, field, msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: code, Field: field, Message: msg}
}

func notFound(what string) *Error {
	return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: what + " not found"}
}

func conflict(code, msg string) *Error {
	return &Error{Status: http.StatusConflict, Code: code, Message: msg}
}

func errInternal() *Error {
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal,
		Message: "internal error; it has been logged"}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the client may be gone; nothing more to do
}

func writeError(w http.ResponseWriter, e *Error) {
	writeJSON(w, e.Status, ErrorBody{Error: e})
}

// fail answers with err. An *Error goes out as it is; the store's sentinel
// errors become their 4xx; anything else is logged and answered with a
// generic 500, so an internal failure's text never reaches a client.
// what names the object for a 404 ("run", "approval").
func (s *server) fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	var apiErr *Error
	switch {
	case errors.As(err, &apiErr):
		writeError(w, apiErr)
	case errors.Is(err, store.ErrNotFound):
		writeError(w, notFound(what))
	case errors.Is(err, store.ErrTerminal):
		writeError(w, conflict(CodeRunFinished, "the run is finished and accepts no more changes"))
	case errors.Is(err, store.ErrHashMismatch):
		writeError(w, &Error{Status: http.StatusConflict, Code: CodeArgsHashMismatch, Field: "args_hash",
			Message: "args_hash does not match the action awaiting approval; fetch the approval again"})
	case errors.Is(err, run.ErrIllegalTransition):
		writeError(w, conflict(CodeConflict, "the run's status does not allow this"))
	case errors.Is(err, store.ErrConflict):
		writeError(w, conflict(CodeConflict, "the request contradicts the stored state"))
	case errors.Is(err, store.ErrInvalid):
		// The handlers validate before they write, so this is a gap in that
		// validation: worth a log line; the backend's text stays here.
		s.log.WarnContext(r.Context(), "store refused input", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, &Error{Status: http.StatusBadRequest, Code: CodeInvalidField, Message: "the request was refused as invalid"})
	case clientGone(r.Context(), err):
		// Nobody is listening; the status is for the request log only.
		w.WriteHeader(499)
	case errors.Is(err, store.ErrCorrupt) || s.corrupt(r, err):
		writeError(w, errCorrupt())
	default:
		s.log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, errInternal())
	}
}

func errCorrupt() *Error {
	return &Error{Status: http.StatusInternalServerError, Code: CodeStoreCorrupt,
		Message: "the store is corrupt: its integrity check fails, so what it holds cannot be trusted; restore a copy"}
}

// corrupt reports whether the store, asked after an unexpected error
// (a damaged database fails reads in many ways), finds itself corrupt;
// it logs what it found.
func (s *server) corrupt(r *http.Request, cause error) bool {
	ic, ok := s.store.(store.IntegrityChecker)
	if !ok {
		return false
	}
	err := ic.CheckIntegrity(r.Context())
	if errors.Is(err, store.ErrCorrupt) {
		s.log.ErrorContext(r.Context(), "store corrupt", "method", r.Method, "path", r.URL.Path, "err", cause, "check", err)
		return true
	}
	return false
}
