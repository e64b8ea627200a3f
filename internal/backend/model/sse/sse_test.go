package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestDecoder holds the SSE decoder to the EventSource format's rules
// the recorded fixtures do not all exercise: CRLF and bare LF line ends,
// comments, multi-line data, a field without a space, blank lines before
// any field, and an event cut by the end of the body (dropped).
func TestDecoder(t *testing.T) {
	type ev struct{ name, data string }
	tests := []struct {
		name string
		in   string
		want []ev
		err  error // after the events
	}{
		{name: "two events", in: "event: a\ndata: 1\n\nevent: b\ndata: 2\n\n", want: []ev{{"a", "1"}, {"b", "2"}}, err: io.EOF},
		{name: "crlf", in: "event: a\r\ndata: {\"x\":1}\r\n\r\n", want: []ev{{"a", `{"x":1}`}}, err: io.EOF},
		{name: "comment and leading blank lines", in: "\n\n: keep-alive\nevent: a\ndata: 1\n\n", want: []ev{{"a", "1"}}, err: io.EOF},
		{name: "multi-line data", in: "data: {\"a\":\ndata: 1}\n\n", want: []ev{{"", "{\"a\":\n1}"}}, err: io.EOF},
		{name: "no space after colon", in: "event:a\ndata:1\n\n", want: []ev{{"a", "1"}}, err: io.EOF},
		{name: "event name does not leak into the next", in: "event: a\ndata: 1\n\ndata: 2\n\n", want: []ev{{"a", "1"}, {"", "2"}}, err: io.EOF},
		{name: "cut mid event is dropped", in: "event: a\ndata: 1\n\nevent: b\ndata: {\"par", want: []ev{{"a", "1"}}, err: io.EOF},
		{name: "cut after the data line, before the blank line", in: "data: 1\n", err: io.EOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDecoder(strings.NewReader(tc.in))
			for i, w := range tc.want {
				name, data, err := d.Next()
				if err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				if name != w.name || string(data) != w.data {
					t.Fatalf("event %d = %q %q, want %q %q", i, name, data, w.name, w.data)
				}
			}
			if _, _, err := d.Next(); !errors.Is(err, tc.err) {
				t.Fatalf("after the events: err = %v, want %v", err, tc.err)
			}
		})
	}
}

// A read error (a cut connection) is returned as it is, for the transport
// to classify as a stream cut.
func TestDecoderReadError(t *testing.T) {
	d := NewDecoder(io.MultiReader(strings.NewReader("data: 1\n\ndata: 2"), errReader{io.ErrUnexpectedEOF}))
	if _, data, err := d.Next(); err != nil || string(data) != "1" {
		t.Fatalf("first = %q, %v", data, err)
	}
	if _, _, err := d.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want unexpected EOF", err)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
