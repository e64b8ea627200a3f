package sqlite

import (
	"encoding/json"
	"fmt"

	"github.com/keelrun/keel/internal/run"
	"github.com/keelrun/keel/internal/store"
)

// maxID bounds every id, owner, key, tool and reference string.
const maxID = 512

// maxTaskToken bounds a Step Functions task token (documented at 1024; room
// for growth).
const maxTaskToken = 8 << 10

func invalid(format string, args ...any) error {
	return fmt.Errorf("sqlite: %w: %s", store.ErrInvalid, fmt.Sprintf(format, args...))
}

func checkID(field, v string) error {
	if v == "" {
		return invalid("%s is empty", field)
	}
	if len(v) > maxID {
		return invalid("%s is %d bytes, over %d", field, len(v), maxID)
	}
	return nil
}

func checkOptional(field, v string) error {
	if len(v) > maxID {
		return invalid("%s is %d bytes, over %d", field, len(v), maxID)
	}
	return nil
}

func checkSize(field string, n, limit int) error {
	if n > limit {
		return invalid("%s is %d bytes, over %d", field, n, limit)
	}
	return nil
}

// checkJSON accepts empty (absent) or one valid JSON document.
func checkJSON(field string, b []byte, limit int) error {
	if err := checkSize(field, len(b), limit); err != nil {
		return err
	}
	if len(b) > 0 && !json.Valid(b) {
		return invalid("%s is not valid JSON", field)
	}
	return nil
}

// argsHash checks args and returns the hash to store: computed from args when
// present (a given hash must agree), else the given hash.
func argsHash(field string, args []byte, given string) (string, error) {
	if err := checkSize(field, len(args), store.MaxArgs); err != nil {
		return "", err
	}
	if len(args) == 0 {
		return given, nil
	}
	h, err := run.ArgsHash(args)
	if err != nil {
		return "", invalid("%s: %v", field, err)
	}
	if given != "" && given != h {
		return "", invalid("%s hash %q does not match the args (%s)", field, given, h)
	}
	return h, nil
}

// checkEventType accepts the shape of an event type (lowercase snake case)
// rather than a closed list, so a new type in package run needs no change
// here.
func checkEventType(t run.EventType) error {
	if t == "" {
		return invalid("event type is empty")
	}
	if len(t) > 64 {
		return invalid("event type %q is over 64 bytes", t)
	}
	for _, c := range []byte(t) {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return invalid("event type %q is not lowercase snake case", t)
		}
	}
	return nil
}

func validPlanStatus(s run.PlanStatus) bool {
	switch s {
	case run.PlanPending, run.PlanAwaitingApproval, run.PlanRunning, run.PlanCompleted,
		run.PlanFailed, run.PlanDenied, run.PlanSkipped, run.PlanNeedsHuman:
		return true
	}
	return false
}

func checkAmounts(a store.Amounts) error {
	if a.Tokens < 0 || a.SpendMicroUSD < 0 || a.ToolCalls < 0 {
		return invalid("negative amount %+v", a)
	}
	return nil
}
