package run

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// CanonicalJSON re-encodes a JSON document in the JSON Canonicalization
// Scheme of RFC 8785 (JCS): object members sorted by the UTF-16 code units
// of their names, no insignificant whitespace, strings with the minimal
// escaping of ECMAScript's JSON.stringify, and numbers as IEEE-754 doubles
// written the way ECMAScript writes them. Two documents that mean the same
// thing to a JCS implementation have the same bytes. testdata/jcs holds the
// RFC's examples and its number serialization table.
//
// Like every JCS implementation it reads numbers as doubles, so a number
// with more precision than a double has is rounded here (the RFC's own
// example 333333333.33333329 becomes 333333333.3333333). ArgsHash refuses
// such numbers instead; see ErrInexactNumber.
func CanonicalJSON(doc []byte) ([]byte, error) {
	return canonical(doc, false)
}

// ErrInexactNumber is returned (wrapped in *InexactNumberError) by ArgsHash
// for a number whose value canonicalization would change: an integer beyond
// 2^53 that has no double (18446744073709551615), or a fraction with more
// digits than a double keeps (1.0000000000000000001). Hashing its rounded
// form would let a person approve one amount while another is sent, so the
// arguments are refused and the model is told to pass such values as
// strings.
var ErrInexactNumber = errors.New("number cannot be carried exactly")

// InexactNumberError names the number ArgsHash refused.
type InexactNumberError struct {
	Number  string // as written in the document
	Rounded string // what an IEEE-754 double (and so JCS) makes of it
}

func (e *InexactNumberError) Error() string {
	return fmt.Sprintf("the number %s cannot be carried exactly by JSON (as an IEEE-754 double it is %s): pass it as a string", e.Number, e.Rounded)
}

// Unwrap makes errors.Is(err, ErrInexactNumber) hold.
func (e *InexactNumberError) Unwrap() error { return ErrInexactNumber }

func canonical(doc []byte, exact bool) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("canonical json: %w", errTrailing)
	}
	if !utf8.Valid(doc) {
		return nil, fmt.Errorf("canonical json: %w", errInvalidUTF8)
	}
	var buf bytes.Buffer
	if err := writeCanonical(&buf, v, exact); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

var (
	errTrailing    = errors.New("trailing data after the document")
	errInvalidUTF8 = errors.New("the document is not valid UTF-8")
)

func writeCanonical(buf *bytes.Buffer, v any, exact bool) error {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return lessUTF16(keys[i], keys[j]) })
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k)
			buf.WriteByte(':')
			if err := writeCanonical(buf, t[k], exact); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCanonical(buf, e, exact); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case json.Number:
		s, err := canonicalNumber(string(t), exact)
		if err != nil {
			return err
		}
		buf.WriteString(s)
	case string:
		writeString(buf, t)
	case bool:
		buf.WriteString(strconv.FormatBool(t))
	case nil:
		buf.WriteString("null")
	default:
		return fmt.Errorf("canonical json: unexpected %T", v)
	}
	return nil
}

// lessUTF16 orders strings by their UTF-16 code units (RFC 8785 §3.2.3).
func lessUTF16(a, b string) bool {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

// writeString escapes as JSON.stringify does (RFC 8785 §3.2.2.2): the two
// characters '"' and '\', the short forms \b \f \n \r \t, other controls as
// \u00xx in lowercase hex, everything else as is.
func writeString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	// Runs of printable ASCII that need no escape are copied whole (event
	// data is mostly that, and this runs for every event hashed); the rest
	// goes rune by rune, as it always did.
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] >= 0x20 && s[i] < 0x80 && s[i] != '"' && s[i] != '\\' {
			i++
		}
		buf.WriteString(s[:i])
		s = s[i:]
		if len(s) == 0 {
			break
		}
		r, size := utf8.DecodeRuneInString(s)
		writeRune(buf, r)
		s = s[size:]
	}
	buf.WriteByte('"')
}

// writeRune writes one rune of a string as writeString does.
func writeRune(buf *bytes.Buffer, r rune) {
	const hexDigits = "0123456789abcdef"
	switch r {
	case '"':
		buf.WriteString(`\"`)
	case '\\':
		buf.WriteString(`\\`)
	case '\b':
		buf.WriteString(`\b`)
	case '\f':
		buf.WriteString(`\f`)
	case '\n':
		buf.WriteString(`\n`)
	case '\r':
		buf.WriteString(`\r`)
	case '\t':
		buf.WriteString(`\t`)
	default:
		if r < 0x20 {
			buf.WriteString(`\u00`)
			buf.WriteByte(hexDigits[r>>4])
			buf.WriteByte(hexDigits[r&0xf])
		} else {
			buf.WriteRune(r)
		}
	}
}

// canonicalNumber writes a JSON number as ECMAScript writes the double
// nearest to it (RFC 8785 §3.2.2.3). With exact, a number whose decimal
// value that changes is refused.
func canonicalNumber(lit string, exact bool) (string, error) {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		if exact {
			return "", fmt.Errorf("canonical json: %w", &InexactNumberError{Number: lit, Rounded: "out of range"})
		}
		return "", fmt.Errorf("canonical json: number %s is out of the range of an IEEE-754 double", lit)
	}
	s := FormatES6(f)
	if exact {
		want, ok1 := new(big.Rat).SetString(lit)
		got, ok2 := new(big.Rat).SetString(s)
		if !ok1 || !ok2 || want.Cmp(got) != 0 {
			return "", fmt.Errorf("canonical json: %w", &InexactNumberError{Number: lit, Rounded: s})
		}
	}
	return s, nil
}

// FormatES6 writes a finite double as ECMAScript's Number.prototype.toString
// does: the shortest digits that read back as f, in plain notation for
// 1e-6 <= |f| < 1e21 and as d.ddde±x otherwise; -0 is "0".
func FormatES6(f float64) string {
	if f == 0 {
		return "0"
	}
	abs := math.Abs(f)
	if abs >= 1e-6 && abs < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(s, "e")
	sign := exp[0]
	exp = strings.TrimLeft(exp[1:], "0")
	return mant + "e" + string(sign) + exp
}

// Args hashes carry a version prefix, so a hash stored by an older Keel is
// still checked by the rule that made it.
const (
	// ArgsHashPrefix starts every hash ArgsHash makes: sha256 of the RFC 8785
	// form, with numbers that form would change refused.
	ArgsHashPrefix = "jcs:"
)

// ArgsHash is "jcs:" and the hex sha256 of the RFC 8785 canonical form of a
// JSON arguments document: key order, whitespace, escapes and number
// spelling (1, 1.0, 1e0) do not change it. A number JSON cannot carry
// exactly is refused with an *InexactNumberError.
func ArgsHash(args []byte) (string, error) {
	c, err := canonical(args, true)
	if err != nil {
		return "", err
	}
	return ArgsHashPrefix + HashBytes(c), nil
}

// VerifyArgsHash reports whether hash is the hash of args under the rule the
// hash names: "jcs:" (ArgsHash) or, for a bare 64-digit hex hash stored
// before the version prefix, the legacy canonical form of Keel 0. It
// returns nil when they agree.
func VerifyArgsHash(args []byte, hash string) error {
	var got string
	var err error
	switch {
	case strings.HasPrefix(hash, ArgsHashPrefix):
		got, err = ArgsHash(args)
	case isLegacyHash(hash):
		got, err = LegacyArgsHash(args)
	default:
		return fmt.Errorf("args hash %q: unknown version", hash)
	}
	if err != nil {
		return err
	}
	if got != hash {
		return fmt.Errorf("args hash %q does not match the args (%s)", hash, got)
	}
	return nil
}

// HashDigits is the hex digest of an args hash without its version prefix.
func HashDigits(hash string) string {
	return strings.TrimPrefix(hash, ArgsHashPrefix)
}

func isLegacyHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil && strings.ToLower(h) == h
}

// HashBytes is the hex sha256 of b, the form every hash in Keel takes.
func HashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
