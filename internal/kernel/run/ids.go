package run

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"time"
)

// NewID returns a new id with the given prefix: the prefix, an underscore,
// then 12 hex digits of the current time in milliseconds and 16 random hex
// digits, so ids sort roughly by creation time.
func NewID(prefix string) string {
	var b [14]byte
	_, _ = rand.Read(b[6:]) // crypto/rand.Read never fails on supported platforms
	return formatID(prefix, b)
}

// NewCheckpointID returns a new id for the checkpoint at seq of its run.
// It has NewID's form with prefix "cp", but of its 16 digits after the
// time, the first 8 are seq (its low 32 bits) and only the last 8 are
// random: a store keyed by (run, seq) finds a checkpoint by its id
// (CheckpointIDSeq) without an index of ids. The id is still unique with
// overwhelming odds (same millisecond, same seq and same 32 random bits),
// and an id is opaque to every reader: nothing but a store's lookup may
// rely on the seq inside, and that lookup must still compare the whole id.
func NewCheckpointID(seq int64) string {
	var b [14]byte
	binary.BigEndian.PutUint32(b[6:10], uint32(seq))
	_, _ = rand.Read(b[10:])
	return formatID("cp", b)
}

// CheckpointIDSeq returns the seq a NewCheckpointID id was made for, and
// false for an id not of NewID's form with prefix "cp". Any id of that form
// gives an answer (an older NewID's random digits too): it names where to
// look, not what is there.
func CheckpointIDSeq(id string) (int64, bool) {
	digits, ok := strings.CutPrefix(id, "cp_")
	if !ok || len(digits) != 28 {
		return 0, false
	}
	b, err := hex.DecodeString(digits)
	if err != nil || hex.EncodeToString(b) != digits {
		return 0, false
	}
	return int64(binary.BigEndian.Uint32(b[6:10])), true
}

// formatID writes prefix, an underscore and b's hex digits, after putting
// the current time in milliseconds in b's first 6 bytes.
func formatID(prefix string, b [14]byte) string {
	ms := uint64(time.Now().UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	var sb strings.Builder
	sb.Grow(len(prefix) + 1 + 2*len(b))
	sb.WriteString(prefix)
	sb.WriteByte('_')
	sb.WriteString(hex.EncodeToString(b[:]))
	return sb.String()
}
