package harness

// A plan item's result: recorded with the item in the pending commit,
// and the model's answer in the transcript.

import (
	"encoding/json"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// recorded is the tool result a plan item holds.
type recorded struct {
	Content string          `json:"content"`
	Data    json.RawMessage `json:"data,omitempty"`
	IsError bool            `json:"is_error,omitempty"`
}

func recordOf(res tool.Result, isErr bool) json.RawMessage {
	b, _ := json.Marshal(recorded{Content: res.Content, Data: res.Data, IsError: isErr})
	return b
}

// finishItem ends it in st with res: recorded in the next commit, and
// its call answered.
func finishItem(pend *pending, tr *transcript, it run.PlanItem, st run.PlanStatus, res tool.Result, isErr bool) {
	it.Status = st
	it.Result = recordOf(res, isErr)
	pend.item(it)
	tr.answer(it.CallID, res, isErr)
}

// answerRecorded answers a call with the result it holds recorded (a
// finished item, or a fork's parent's): the effect is never repeated.
func answerRecorded(tr *transcript, callID string, it run.PlanItem) error {
	rec, err := decodeRecorded(it)
	if err != nil {
		return err
	}
	tr.answer(callID, tool.Result{Content: rec.Content, Data: rec.Data}, rec.IsError)
	return nil
}

// CorruptRecordError: a stored record cannot be read back. The Step stops
// rather than answer the model with an empty result that never happened.
type CorruptRecordError struct {
	RunID, PlanItemID string
	Err               error
}

func (e *CorruptRecordError) Error() string {
	return fmt.Sprintf("run %s: plan item %s: the stored result is corrupt: %v", e.RunID, e.PlanItemID, e.Err)
}
func (e *CorruptRecordError) Unwrap() error { return e.Err }

// decodeRecorded reads a finished item's recorded result.
func decodeRecorded(it run.PlanItem) (recorded, error) {
	var rec recorded
	if err := json.Unmarshal(it.Result, &rec); err != nil {
		return recorded{}, &CorruptRecordError{RunID: it.RunID, PlanItemID: it.ID, Err: err}
	}
	return rec, nil
}
