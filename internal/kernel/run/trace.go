package run

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
)

// NewTraceParent returns a new W3C traceparent
// (https://www.w3.org/TR/trace-context/#traceparent-header): version 00, a
// random trace id, a random parent id and the sampled flag. It is made
// when a run is created, whether or not this process exports traces, so
// that every run has one trace id from its first record on; the sampler
// of each exporting process decides what is recorded (a ratio sampler
// decides by trace id, so one run is in or out as a whole).
func NewTraceParent() string {
	var b [24]byte
	for {
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
		if !allZero(b[:16]) && !allZero(b[16:]) {
			break
		}
	}
	return "00-" + hex.EncodeToString(b[:16]) + "-" + hex.EncodeToString(b[16:]) + "-01"
}

// ErrTraceParent: a traceparent that is not version 00 of the W3C format.
var ErrTraceParent = errors.New("trace_parent: want 00-<32 hex>-<16 hex>-<2 hex>")

// ValidTraceParent checks tp ("" is valid: a run created before trace
// contexts were stored has none).
func ValidTraceParent(tp string) error {
	if tp == "" {
		return nil
	}
	parts := strings.Split(tp, "-")
	if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 || len(parts[3]) != 2 {
		return ErrTraceParent
	}
	for _, p := range parts[1:] {
		b, err := hex.DecodeString(p)
		if err != nil || p != strings.ToLower(p) || (len(b) > 1 && allZero(b)) {
			return ErrTraceParent
		}
	}
	return nil
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}
