package store

import (
	"encoding/json"

	"github.com/keelrun/keel/internal/run"
)

// CancelledByPerson is the run_cancelled event a backend's RequestCancel
// appends when it ends a needs_human run: the person's cancel is the
// decision the run waited for, and the log says so ("by" and "decision").
func CancelledByPerson(by string) (run.Event, error) {
	data, err := json.Marshal(map[string]string{"by": by, "decision": "cancel", "from": string(run.StatusNeedsHuman)})
	if err != nil {
		return run.Event{}, err
	}
	return run.Event{Type: run.EventRunCancelled, Data: data}, nil
}
