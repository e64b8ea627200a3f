package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// decodeBody reads r's body as exactly one JSON object into dst, refusing
// unknown fields (names match exactly, case included), keys given twice,
// bytes that are not UTF-8, wrong types, trailing data, bodies over the
// size bound and media types other than JSON. An empty body is accepted only with
// allowEmpty (dst is then left as it is).
func (s *server) decodeBody(w http.ResponseWriter, r *http.Request, dst any, allowEmpty bool) *Error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return &Error{Status: http.StatusUnsupportedMediaType, Code: CodeUnsupportedMediaType,
				Field: "Content-Type", Message: fmt.Sprintf("the body must be application/json, not %q", ct)}
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		if tooLarge(err) {
			return errTooLarge(s.maxBody)
		}
		return &Error{Status: http.StatusBadRequest, Code: CodeMalformedJSON, Message: "the body could not be read"}
	}
	// Before anything can echo a part of the body (an unknown field's
	// name, a bad value): see refuseSecret.
	if e := s.refuseSecret(r, body); e != nil {
		return e
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if e := checkStrict(body, reflect.TypeOf(dst)); e != nil {
			return e
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err = dec.Decode(dst)
	if err == nil {
		// Exactly one value: anything after it but white space is an error.
		var extra json.RawMessage
		if err2 := dec.Decode(&extra); err2 != io.EOF {
			if tooLarge(err2) {
				return errTooLarge(s.maxBody)
			}
			return &Error{Status: http.StatusBadRequest, Code: CodeMalformedJSON,
				Message: "the body must hold exactly one JSON object; found data after it"}
		}
		// The decoded values, as the answers would encode them: a secret
		// spelled with \u escapes in the body is one after decoding.
		canonical, err := json.Marshal(dst)
		if err != nil {
			return nil
		}
		return s.refuseSecret(r, canonical)
	}
	if errors.Is(err, io.EOF) {
		if allowEmpty {
			return nil
		}
		return &Error{Status: http.StatusBadRequest, Code: CodeMalformedJSON, Message: "the body is empty; send a JSON object"}
	}
	if tooLarge(err) {
		return errTooLarge(s.maxBody)
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return &Error{Status: http.StatusBadRequest, Code: CodeMalformedJSON,
			Message: fmt.Sprintf("malformed JSON at byte %d: %s", syn.Offset, syn.Error())}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Status: http.StatusBadRequest, Code: CodeMalformedJSON, Message: "malformed JSON: the body ends too early"}
	case errors.As(err, &typ):
		if typ.Field == "" {
			return &Error{Status: http.StatusBadRequest, Code: CodeWrongType,
				Message: fmt.Sprintf("the body must be a JSON object, not %s", typ.Value)}
		}
		return badField(CodeWrongType, typ.Field,
			fmt.Sprintf("%s must be %s, not %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value))
	}
	// encoding/json reports an unknown field only as text: json: unknown field "x".
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name, _ = strconv.Unquote(name)
		return badField(CodeUnknownField, name, fmt.Sprintf("unknown field %q", name))
	}
	var fe *fieldError
	if errors.As(err, &fe) {
		return badField(CodeInvalidField, fe.field, fe.msg)
	}
	return &Error{Status: http.StatusBadRequest, Code: CodeMalformedJSON, Message: "the body is not valid JSON for this endpoint"}
}

func tooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

func errTooLarge(limit int64) *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeBodyTooLarge,
		Message: fmt.Sprintf("the body exceeds %d bytes", limit)}
}

// jsonKind names a Go kind the way a JSON client thinks of it.
func jsonKind(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"), strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "string":
		return "a string"
	case kind == "bool":
		return "true or false"
	case kind == "struct", kind == "map":
		return "an object"
	case kind == "slice", kind == "array":
		return "an array"
	}
	return "another type"
}

// fieldError is returned by a request type's UnmarshalJSON to name the
// field at fault (e.g. an unparsable deadline).
type fieldError struct{ field, msg string }

func (e *fieldError) Error() string { return e.field + ": " + e.msg }

// queryInt parses an optional integer query parameter within [lo, hi].
func queryInt(r *http.Request, name string, def, lo, hi int64) (int64, *Error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, badField(CodeWrongType, name, fmt.Sprintf("%s must be an integer, not %q", name, v))
	}
	if n < lo || n > hi {
		return 0, badField(CodeInvalidField, name, fmt.Sprintf("%s must be between %d and %d", name, lo, hi))
	}
	return n, nil
}

// MinRefusedSecret is the shortest configured secret a request body may
// not hold. Shorter ones are still masked in answers, but refusing every
// body that holds a four-letter word would refuse ordinary input.
const MinRefusedSecret = 8

// refuseSecretInURL is refuseSecret for the URL: an error that echoes a
// query value (an unknown status) or a path segment would show a secret
// among the guesses masked. field names the query parameter, or "path".
func (s *server) refuseSecretInURL(r *http.Request) *Error {
	if s.guard.Len() == 0 {
		return nil
	}
	field := ""
	if s.guard.Contains(r.URL.Path) || s.guard.Contains(r.URL.EscapedPath()) {
		field = "path"
	}
	if field == "" && s.guard.Contains(r.URL.RawQuery) {
		field = "query"
	}
	q := r.URL.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if field != "" && field != "query" {
			break
		}
		if s.guard.Contains(k) || slices.ContainsFunc(q[k], s.guard.Contains) {
			field = k
		}
	}
	if field == "" {
		return nil
	}
	s.log.WarnContext(r.Context(), "request refused: its URL holds a configured secret's value", "method", r.Method, "field", field)
	return &Error{Status: http.StatusBadRequest, Code: CodeSecretInRequest, Field: field,
		Message: "the URL holds the value of a secret configured on this deployment; it is neither stored nor echoed"}
}

// refuseSecret refuses a request body that holds the value of a secret
// configured on the deployment (s.guard), in any form the answers mask.
//
// Masking by value is an oracle when the masked text is the caller's
// own: a run input of 50,000 guesses came back with the one that is a
// secret shown as ****. Refused instead, the body is not stored (no
// record, no model input holds the secret), and the answer says only
// that some part of the named field matched, not which: one bit per
// request, each refusal logged as a warning, where masking answered every
// guess of the body at once.
func (s *server) refuseSecret(r *http.Request, body []byte) *Error {
	if s.guard.Len() == 0 || !s.guard.Contains(string(body)) {
		return nil
	}
	field := ""
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) == nil {
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if s.guard.Contains(k) || s.guard.Contains(string(obj[k])) {
				field = k
				break
			}
		}
	}
	s.log.WarnContext(r.Context(), "request refused: its body holds a configured secret's value", "method", r.Method,
		"path", r.URL.Path, "field", field)
	return &Error{Status: http.StatusBadRequest, Code: CodeSecretInRequest, Field: field,
		Message: "the body holds the value of a secret configured on this deployment; it is neither stored nor echoed. " +
			"Give a tool its credentials in its configuration, not in a run's input or arguments"}
}
