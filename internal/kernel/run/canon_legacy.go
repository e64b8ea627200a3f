package run

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
)

// legacyCanonicalJSON is the canonical form of args hashes without a
// version prefix (Keel 0), kept only to verify hashes stored then. It
// rounds numbers through float64: never use it to make a new hash. It re-encodes a JSON document with object keys sorted, no
// insignificant whitespace and numbers in their shortest form, so that two
// documents that mean the same thing have the same bytes. Numbers are kept
// exact (json.Number), never rounded through float64.
func legacyCanonicalJSON(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("canonical json: trailing data after the document")
	}
	var buf bytes.Buffer
	if err := legacyWriteCanonical(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func legacyWriteCanonical(buf *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			buf.Write(kb)
			buf.WriteByte(':')
			if err := legacyWriteCanonical(buf, t[k]); err != nil {
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
			if err := legacyWriteCanonical(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case json.Number:
		buf.WriteString(legacyCanonicalNumber(t))
	default:
		b, err := json.Marshal(t)
		if err != nil {
			return fmt.Errorf("canonical json: %w", err)
		}
		buf.Write(b)
	}
	return nil
}

// legacyCanonicalNumber writes integers exactly and other numbers in the shortest
// float64 form, so 1.0, 1 and 1e0 agree.
func legacyCanonicalNumber(n json.Number) string {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return strconv.FormatInt(i, 10)
	}
	if f, err := strconv.ParseFloat(string(n), 64); err == nil {
		if f == float64(int64(f)) && f < 1e15 && f > -1e15 {
			return strconv.FormatInt(int64(f), 10)
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return string(n)
}

// LegacyArgsHash is the unprefixed hash of Keel 0, which VerifyArgsHash
// still accepts. It is exported for tests of records stored then; never make
// a new hash with it.
func LegacyArgsHash(args []byte) (string, error) {
	c, err := legacyCanonicalJSON(args)
	if err != nil {
		return "", err
	}
	return HashBytes(c), nil
}
