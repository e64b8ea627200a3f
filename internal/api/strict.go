package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// checkStrict refuses what encoding/json would let through in a request
// body: bytes that are not UTF-8 (it turns them into U+FFFD), a key that
// matches a field of t only when case is ignored (encoding/json matches
// case-insensitively), and a key given twice in one object (encoding/json
// keeps the last). Syntax errors are left to the decoder that follows,
// which reports them with their offset.
func checkStrict(body []byte, t reflect.Type) *Error {
	if !utf8.Valid(body) {
		return &Error{Status: 400, Code: CodeMalformedJSON, Message: "the body is not valid UTF-8"}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	e, _ := strictValue(dec, t, "")
	return e
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// strictValue reads one value from dec, checking it against t (nil: any
// JSON, checked for duplicate keys only). ok is false when the token
// stream broke off (a syntax error: the decoder reports it).
func strictValue(dec *json.Decoder, t reflect.Type, path string) (*Error, bool) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && (reflect.PointerTo(t).Implements(unmarshalerType) || t.Kind() == reflect.Interface) {
		t = nil // its own decoding, or any JSON: only duplicates are checked
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, false
	}
	d, isDelim := tok.(json.Delim)
	if !isDelim {
		return nil, true
	}
	switch d {
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if e, ok := strictValue(dec, elem, path); e != nil || !ok {
				return e, ok
			}
		}
	case '{':
		var fields map[string]reflect.Type
		var elem reflect.Type
		if t != nil && t.Kind() == reflect.Struct {
			fields = jsonFields(t)
		} else if t != nil && t.Kind() == reflect.Map {
			elem = t.Elem()
		}
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, false
			}
			key, _ := kt.(string)
			name := key
			if path != "" {
				name = path + "." + key
			}
			if seen[key] {
				return badField(CodeMalformedJSON, name, fmt.Sprintf("the key %q appears twice in one object", key)), true
			}
			seen[key] = true
			ft := elem
			if fields != nil {
				var known bool
				if ft, known = fields[key]; !known {
					return badField(CodeUnknownField, key, fmt.Sprintf("unknown field %q (field names are case-sensitive)", key)), true
				}
			}
			if e, ok := strictValue(dec, ft, name); e != nil || !ok {
				return e, ok
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return nil, false
	}
	return nil, true
}

// jsonFields maps the exact JSON names of t's fields to their types, the
// way encoding/json names them (tag name, else the Go name; "-" skipped).
func jsonFields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			if f.Anonymous {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					for k, v := range jsonFields(ft) {
						m[k] = v
					}
					continue
				}
			}
			name = f.Name
		}
		m[name] = f.Type
	}
	return m
}
