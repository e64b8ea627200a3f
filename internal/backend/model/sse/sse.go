// Package sse decodes server-sent events (the WHATWG EventSource format),
// the framing of the Anthropic Messages and OpenAI Chat Completions
// streams.
package sse

import (
	"bufio"
	"bytes"
	"io"
)

// Decoder reads server-sent events (the WHATWG EventSource format): field
// lines up to a blank line make one event. An event cut by the end of the
// body is dropped, as the format says: a stream cut mid-event reads as a
// stream that ended early, not as a malformed event.
type Decoder struct {
	r    *bufio.Reader
	data bytes.Buffer
	name string
}

// NewDecoder reads events from r.
func NewDecoder(r io.Reader) *Decoder { return &Decoder{r: bufio.NewReaderSize(r, 16<<10)} }

// Next returns the next event's name and data (valid until the next
// call); io.EOF at a clean end;
// a read error (a cut connection) as it is.
func (d *Decoder) Next() (name string, data []byte, err error) {
	d.name = ""
	d.data.Reset()
	seen := false // a data field was read
	for {
		line, err := d.r.ReadBytes('\n')
		if err != nil {
			// Whatever is pending is an incomplete event.
			return "", nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if !seen {
				d.name = ""
				continue // a blank line with nothing before it
			}
			return d.name, d.data.Bytes(), nil
		}
		if line[0] == ':' {
			continue // a comment
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			d.name = string(value)
		case "data":
			if seen {
				d.data.WriteByte('\n')
			}
			d.data.Write(value)
			seen = true
		}
	}
}
