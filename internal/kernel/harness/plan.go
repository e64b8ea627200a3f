package harness

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// plan is the run's plan items as a Step knows them, looked up by the
// model call they answer: the run's own, durable or in the pending
// commit (which puts every item it will write here), and those of the
// runs it forked from, whose recorded results a fork reuses.
type plan struct {
	items     map[string]run.PlanItem // by model call id, this run
	inherited map[string]run.PlanItem // by model call id, runs this one forked from (nearest first)
	next      int64                   // the order of the next new item
}

// newPlan is the plan of a run with its own items and those of the runs
// it forked from, nearest first: a nearer ancestor's item for a call
// wins.
func newPlan(own, inherited []run.PlanItem) plan {
	p := plan{items: make(map[string]run.PlanItem, len(own)), inherited: map[string]run.PlanItem{}}
	for _, it := range own {
		p.items[it.CallID] = it
		if it.Order >= p.next {
			p.next = it.Order + 1
		}
	}
	for _, it := range inherited {
		if _, ok := p.inherited[it.CallID]; !ok {
			p.inherited[it.CallID] = it
		}
	}
	return p
}

// loaded: the run's items were read (or taken from the cache).
func (p *plan) loaded() bool { return p.items != nil }

// get is the run's item for a model call.
func (p *plan) get(callID string) (run.PlanItem, bool) {
	it, ok := p.items[callID]
	return it, ok
}

// byID is the run's item with id.
func (p *plan) byID(id string) (run.PlanItem, bool) {
	for _, x := range p.items {
		if x.ID == id {
			return x, true
		}
	}
	return run.PlanItem{}, false
}

// put makes it the item of its call.
func (p *plan) put(it run.PlanItem) { p.items[it.CallID] = it }

// newItem is a pending item of run runID for call tc, next in order. It
// is not the call's item until it is put: a call whose item is never
// written gets a new one (and order) when it is planned again.
func (p *plan) newItem(runID string, tc model.ToolCall) run.PlanItem {
	it := run.PlanItem{ID: run.NewID("item"), RunID: runID, Order: p.next, Tool: tc.Name, Args: tc.Args, CallID: tc.ID, Status: run.PlanPending}
	p.next++
	return it
}

// recorded is the item a run this one forked from recorded a result for
// the call in, if any: a fork reuses it and never repeats the effect.
func (p *plan) recorded(callID string) (run.PlanItem, bool) {
	it, ok := p.inherited[callID]
	return it, ok && len(it.Result) > 0
}

// waiting is the items that wait for a person (needs_human).
func (p *plan) waiting() []run.PlanItem {
	var out []run.PlanItem
	for _, it := range p.items {
		if it.Status == run.PlanNeedsHuman {
			out = append(out, it)
		}
	}
	return out
}

// live is the items without the finished ones of answered calls: a Step
// looks items up only for the open calls of the last answer and for
// pending operations (whose items are not finished), and with everything
// committed a finished item's call is answered in the transcript. Keeping
// only these keeps a long run's cache entry from growing with its length.
func (p *plan) live(open []model.ToolCall) map[string]run.PlanItem {
	isOpen := map[string]bool{}
	for _, tc := range open {
		isOpen[tc.ID] = true
	}
	live := make(map[string]run.PlanItem, len(isOpen))
	for callID, it := range p.items {
		switch {
		case isOpen[callID]:
		case finished(it.Status):
			continue
		}
		live[callID] = it
	}
	return live
}

// finished: an item in st has its result and runs nothing more.
func finished(st run.PlanStatus) bool {
	return st == run.PlanCompleted || st == run.PlanFailed || st == run.PlanDenied || st == run.PlanSkipped
}

// opID is the operation of an item's call (an effect, or a sub-agent's
// child run): derived from the item, so a crash finds it again.
func opID(it run.PlanItem) string { return "op_" + strings.TrimPrefix(it.ID, "item_") }

// approvalID is deterministic in the item and its exact args: the same
// proposal finds its approval again after a crash; changed args never do.
func approvalID(it run.PlanItem) string {
	h := run.HashDigits(it.ArgsHash)
	if len(h) > 16 {
		h = h[:16]
	}
	return "apr_" + strings.TrimPrefix(it.ID, "item_") + "_" + h
}

// invalidArgs is what a plan item stores of arguments it refused: the text
// the model sent, under "invalid_json" when it is not JSON and
// "invalid_args" when no args hash can bind it.
func invalidArgs(raw json.RawMessage) json.RawMessage {
	key := "invalid_args"
	if !json.Valid(raw) {
		key = "invalid_json"
	}
	return mustJSON(map[string]string{key: string(raw)})
}

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
