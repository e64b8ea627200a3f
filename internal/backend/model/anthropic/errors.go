package anthropic

import (
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/keelrun/keel/internal/kernel/model"
)

// maxErrorBody bounds what is read of an error response.
const maxErrorBody = 1 << 20

// apiError is the body of an error response, and the data of an in-stream
// error event: {"type":"error","error":{"type":"...","message":"..."}}.
type apiError struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// statusError reads a non-2xx response into a *model.StatusError. Only
// error.message is surfaced, redacted: never the raw body, which may echo
// the key.
func (p *Provider) statusError(resp *http.Response) error {
	se := &model.StatusError{
		Provider:   Name,
		Status:     resp.StatusCode,
		RequestID:  model.Redact(resp.Header.Get("Request-Id"), p.cfg.APIKey),
		RetryAfter: model.RetryAfter(resp.Header, time.Now()),
	}
	var e apiError
	if b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody)); err == nil && json.Unmarshal(b, &e) == nil {
		se.Message = model.Redact(e.Error.Message, p.cfg.APIKey)
	}
	if se.Message == "" {
		se.Message = http.StatusText(se.Status)
	}
	return se
}

// inStreamError is an error event inside a 200 stream: its type says what
// went wrong, and maps to the status the same error has outside a stream.
func (p *Provider) inStreamError(e apiError, requestID string) error {
	msg := model.Redact(e.Error.Message, p.cfg.APIKey)
	if msg == "" {
		msg = "error event"
	}
	return &model.StatusError{
		Provider:  Name,
		Status:    inStreamStatus(e.Error.Type),
		RequestID: model.Redact(requestID, p.cfg.APIKey),
		Message:   model.Redact(e.Error.Type, p.cfg.APIKey) + ": " + msg,
	}
}

// inStreamStatus maps the type of an in-stream error event to the HTTP
// status the same error has outside a stream.
func inStreamStatus(typ string) int {
	switch typ {
	case "overloaded_error":
		return 529
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	default:
		return http.StatusInternalServerError
	}
}
