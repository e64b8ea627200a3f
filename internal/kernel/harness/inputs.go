package harness

// New input during a run: queued inputs start the next turn, oldest
// first, in batches one commit can hold.

import (
	"context"
	"strings"

	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// inputCommitReserve is what the commit that consumes a batch of inputs
// writes besides the pending records and the inputs: the run row, the
// checkpoint, checkpoint_written and turn_started, plus a margin.
const inputCommitReserve = 8

// takeInputs starts a new turn from queued input, if any. It takes the
// oldest inputs in a bounded batch — as many as the commit that consumes
// them can hold under store.MaxItemsPerCommit, and at most store.MaxText
// bytes of text (the first input always) — so that any number of queued
// inputs never makes a commit the store refuses; the rest start the
// following turns, in order.
func takeInputs(ctx context.Context, e *env, tr *transcript, pend *pending) (bool, error) {
	inputs, err := e.opt.Store.ListInputs(ctx, e.run.ID, true)
	if err != nil {
		return false, &RetryableError{Err: err}
	}
	if len(inputs) == 0 {
		return false, nil
	}
	room := pend.room(inputCommitReserve)
	if room < 1 {
		// The pending records leave no room: commit them first.
		if err := pend.flush(ctx, store.Commit{}); err != nil {
			return false, err
		}
		room = pend.room(inputCommitReserve)
	}
	var texts, ids []string
	size := 0
	for _, in := range inputs {
		if len(ids) >= room || (len(ids) > 0 && size+len(in.Text) > store.MaxText) {
			break
		}
		size += len(in.Text)
		texts = append(texts, in.Text)
		ids = append(ids, in.ID)
	}
	pend.consume(ids)
	tr.add(model.Message{Role: model.RoleUser, Text: strings.Join(texts, "\n\n")})
	pend.event(run.Event{Type: run.EventTurnStarted, Data: mustJSON(map[string]any{"inputs": ids})})
	return true, nil
}
