package scrub

import (
	"bytes"
	"encoding/json"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Mask is what a secret value becomes.
const Mask = "****"

// MinLen is the shortest value matched.
const MinLen = 4

// Secrets is an immutable set of secret values; the zero value masks
// nothing. It is safe for concurrent use.
type Secrets struct {
	values []string // as given, sorted, without duplicates
	r      *strings.Replacer
}

// New returns the set of values (empty and short ones are left out).
func New(values ...string) Secrets { return Secrets{}.With(values...) }

// With returns a set of s's values and values.
func (s Secrets) With(values ...string) Secrets {
	all := slices.Clone(s.values)
	for _, v := range values {
		if len(v) >= MinLen {
			all = append(all, v)
		}
	}
	slices.Sort(all)
	all = slices.Compact(all)
	if len(all) == 0 {
		return Secrets{}
	}
	var forms []string
	for _, v := range all {
		forms = append(forms, encodings(v)...)
	}
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) }) // longest first
	forms = slices.Compact(forms)
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Mask)
	}
	return Secrets{values: all, r: strings.NewReplacer(pairs...)}
}

// encodings are v and the forms it takes in Keel's outputs.
func encodings(v string) []string {
	out := []string{v}
	if j, err := json.Marshal(v); err == nil {
		out = append(out, string(j[1:len(j)-1]))
	}
	q := strconv.Quote(v)
	out = append(out, q[1:len(q)-1], url.QueryEscape(v), url.PathEscape(v))
	var keep []string
	for _, f := range out {
		if len(f) >= MinLen && !slices.Contains(keep, f) {
			keep = append(keep, f)
		}
	}
	return keep
}

// AtLeast returns the set of s's values at least n bytes long.
func (s Secrets) AtLeast(n int) Secrets {
	var keep []string
	for _, v := range s.values {
		if len(v) >= n {
			keep = append(keep, v)
		}
	}
	return New(keep...)
}

// Len is the number of values in the set.
func (s Secrets) Len() int { return len(s.values) }

// String returns v with every secret masked.
func (s Secrets) String(v string) string {
	if s.r == nil {
		return v
	}
	return s.r.Replace(v)
}

// Bytes returns b with every secret masked (b itself when none is in it).
func (s Secrets) Bytes(b []byte) []byte {
	if s.r == nil {
		return b
	}
	in := string(b)
	if out := s.r.Replace(in); out != in {
		return []byte(out)
	}
	return b
}

// Contains reports whether v holds any secret.
func (s Secrets) Contains(v string) bool { return s.r != nil && s.r.Replace(v) != v }

// Writer returns a writer that masks every secret in each Write before
// passing it to w. A secret split across two Writes is not matched: use
// it where each Write is a whole record (a slog handler's line, an
// encoded JSON document, an SSE event).
func (s Secrets) Writer(w io.Writer) io.Writer {
	if s.r == nil {
		return w
	}
	return writer{w: w, s: s}
}

type writer struct {
	w io.Writer
	s Secrets
}

// Write reports len(p) written when the masked bytes were all written.
func (w writer) Write(p []byte) (int, error) {
	out := w.s.Bytes(p)
	if bytes.Equal(out, p) {
		return w.w.Write(p)
	}
	if _, err := w.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
