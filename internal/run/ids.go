package run

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"
)

// NewID returns a new id with the given prefix: the prefix, an underscore,
// then 12 hex digits of the current time in milliseconds and 16 random hex
// digits, so ids sort roughly by creation time.
func NewID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	ms := uint64(time.Now().UnixMilli())
	var t [6]byte
	for i := 5; i >= 0; i-- {
		t[i] = byte(ms)
		ms >>= 8
	}
	var sb strings.Builder
	sb.WriteString(prefix)
	sb.WriteByte('_')
	sb.WriteString(hex.EncodeToString(t[:]))
	sb.WriteString(hex.EncodeToString(b[:]))
	return sb.String()
}
