package sqlite

// How the records a step writes are encoded in their rows (migration
// 0005): what is stored is smaller than the Go record, and reading gives
// the record back exactly (every stored byte an event's hash covers comes
// back as it was hashed).

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// eventTypes maps event types to their codes in the event_types table and
// back. It is read once in Open and never changed after.
type eventTypes struct {
	code map[run.EventType]int64
	name map[int64]run.EventType
}

func loadEventTypes(ctx context.Context, db *sql.DB) (eventTypes, error) {
	t := eventTypes{code: map[run.EventType]int64{}, name: map[int64]run.EventType{}}
	rows, err := db.QueryContext(ctx, `SELECT code, name FROM event_types`)
	if err != nil {
		return t, fmt.Errorf("sqlite: event types: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c int64
		var n run.EventType
		if err := rows.Scan(&c, &n); err != nil {
			return t, fmt.Errorf("sqlite: event types: %w", err)
		}
		t.code[n], t.name[c] = c, n
	}
	if err := rows.Err(); err != nil {
		return t, fmt.Errorf("sqlite: event types: %w", err)
	}
	return t, nil
}

// encode is what the type column stores: the code, or the name of a type
// the table does not list (a newer binary's, or an unknown one).
func (t eventTypes) encode(typ run.EventType) any {
	if c, ok := t.code[typ]; ok {
		return c
	}
	return string(typ)
}

// decode reads the type column back.
func (t eventTypes) decode(v any) (run.EventType, error) {
	switch v := v.(type) {
	case int64:
		if n, ok := t.name[v]; ok {
			return n, nil
		}
		return "", fmt.Errorf("sqlite: unknown event type code %d", v)
	case string:
		return run.EventType(v), nil
	case []byte:
		return run.EventType(v), nil
	}
	return "", fmt.Errorf("sqlite: event type of kind %T", v)
}

// hashBlob is what a hash column stores for h: 32 bytes when h is 64
// lowercase hex digits after prefix, else h itself (a legacy or foreign
// form, kept as it was); "" stays "".
func hashBlob(prefix, h string) any { return hexBlob(prefix, h, 64) }

// hexBlob is s's n lowercase hex digits after prefix as bytes, or s itself
// when it has another form (so it reads back as it was).
func hexBlob(prefix, s string, n int) any {
	digits, ok := strings.CutPrefix(s, prefix)
	if !ok || len(digits) != n {
		return s
	}
	b, err := hex.DecodeString(digits)
	if err != nil || hex.EncodeToString(b) != digits {
		return s
	}
	return b
}

// hashText reads a hash column back: prefix and hex for a BLOB.
func hashText(prefix string, v any) string {
	switch v := v.(type) {
	case []byte:
		return prefix + hex.EncodeToString(v)
	case string:
		return v
	}
	return ""
}

// eventHash is hashBlob for an event's stored hash; an empty BLOB for none
// (before the chain, 0002): NULL is a hash derived on read (0006).
func eventHash(h string) any {
	if h == "" {
		return []byte{}
	}
	return hashBlob("", h)
}

// checkpointEventData is the data of a checkpoint_written event that says
// exactly what its checkpoint row says; such an event stores the
// checkpoint's seq instead.
func checkpointEventData(id string, seq, size int64) []byte {
	b := make([]byte, 0, 64+len(id))
	b = append(b, `{"bytes":`...)
	b = strconv.AppendInt(b, size, 10)
	b = append(b, `,"checkpoint_id":`...)
	b = strconv.AppendQuote(b, id)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	return append(b, '}')
}

// eventData is what an event's data column stores: its checkpoint's seq
// when the event is that checkpoint's checkpoint_written and says nothing
// else (cp is the commit's checkpoint, nil when none), else its bytes packed
// (payload.go).
func (s *Store) eventData(e run.Event, cp *run.Checkpoint) any {
	if len(e.Data) == 0 {
		return nil
	}
	if cp != nil && e.Type == run.EventCheckpointWritten && cp.Seq > 0 && plainID(cp.ID) &&
		bytes.Equal(e.Data, checkpointEventData(cp.ID, cp.Seq, cp.Size)) {
		return cp.Seq
	}
	return s.pc.pack(e.Data)
}

// plainID: printable ASCII that strconv.Quote and encoding/json write
// alike, so the rebuilt bytes are the ones the harness wrote.
func plainID(id string) bool {
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// maxKeySeq is the largest seq a row keyed rk << 32 | seq can have, and
// maxRunKey the largest rk.
const (
	maxKeySeq = 1<<32 - 1
	maxRunKey = 1<<31 - 1
)

// checkKey refuses a row key past the encoding's bounds (four billion
// events or checkpoints in one run, two billion runs in one file).
func checkKey(rk, seq int64) error {
	if rk < 1 || rk > maxRunKey || seq < 0 || seq > maxKeySeq {
		return fmt.Errorf("%w: run key %d, seq %d out of range", store.ErrInvalid, rk, seq)
	}
	return nil
}

// Plan item modes and statuses are stored as these codes (migration
// 0006); a value missing here is stored by name. Codes are never reused or
// renumbered: a new value gets the next one. 0 and 1 cost no bytes in a
// row, so the commonest values have them.
var (
	modeCodes   = []run.Mode{run.ModeSafeReadonly, run.ModeConfirmOnce, run.ModeMutating}
	statusCodes = []run.PlanStatus{run.PlanCompleted, run.PlanPending, run.PlanAwaitingApproval, run.PlanRunning,
		run.PlanFailed, run.PlanDenied, run.PlanSkipped, run.PlanNeedsHuman}
)

// enumCode is what a mode or status column stores for v: its index in
// codes, else its name.
func enumCode[T ~string](codes []T, v T) any {
	for i, c := range codes {
		if c == v {
			return int64(i)
		}
	}
	return string(v)
}

// enumName reads a mode or status column back: a code, or a name (every
// row written before 0006).
func enumName[T ~string](codes []T, v any) (T, error) {
	switch v := v.(type) {
	case int64:
		if v >= 0 && v < int64(len(codes)) {
			return codes[v], nil
		}
		return "", fmt.Errorf("sqlite: unknown code %d", v)
	case string:
		return T(v), nil
	case []byte:
		return T(v), nil
	}
	return "", fmt.Errorf("sqlite: enum of kind %T", v)
}

// The id prefixes stored as bytes: run.NewID's form is the prefix, then
// 28 lowercase hex digits (14 bytes).
const (
	cpPrefix   = "cp_"
	itemPrefix = "item_"
	idDigits   = 28
)

// idKey is what an id column stores for id: the 14 bytes of its digits
// when it has run.NewID's form with prefix, else the text. The form is
// canonical (0006 converted every older row), so a lookup by the same rule
// finds the row whichever way it was written.
func idKey(prefix, id string) any { return hexBlob(prefix, id, idDigits) }

// idText reads an id column back, as hashText reads a hash.
func idText(prefix string, v any) string { return hashText(prefix, v) }
