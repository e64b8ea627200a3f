package harness

// A plan item's result: recorded with the item in the pending commit,
// and the model's answer in the transcript.

import (
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

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
