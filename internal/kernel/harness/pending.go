package harness

// What the next commit of a Step writes: the events, plan items, usage
// and run patch it collects, and the tool answers the transcript gets.

import (
	"encoding/json"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// pending is what the next commit will write.
type pending struct {
	events   []run.Event
	items    map[string]run.PlanItem // by id
	itemIDs  []string
	used     store.Amounts
	released store.Amounts
	steps    int64
	consume  []string
	patch    store.RunPatch
}

func (p *pending) empty() bool {
	return len(p.events) == 0 && len(p.items) == 0 && p.steps == 0 && len(p.consume) == 0 &&
		p.patch == (store.RunPatch{}) && p.used == (store.Amounts{}) && p.released == (store.Amounts{})
}

// closing reports the event types that end a turn or a run.
func closing(t run.EventType) bool {
	switch t {
	case run.EventTurnCompleted, run.EventRunCompleted, run.EventRunFailed, run.EventRunCancelled, run.EventRunNeedsHuman:
		return true
	}
	return false
}

func (s *step) addEvent(e run.Event) {
	if e.Time.IsZero() {
		e.Time = s.opt.Clock()
	}
	e.Data = s.red.bytes(e.Data)
	s.pend.events = append(s.pend.events, e)
}

func (s *step) putItem(it run.PlanItem) {
	it.UpdatedAt = s.opt.Clock()
	it.Result = s.red.bytes(it.Result)
	if s.pend.items == nil {
		s.pend.items = map[string]run.PlanItem{}
	}
	if _, ok := s.pend.items[it.ID]; !ok {
		s.pend.itemIDs = append(s.pend.itemIDs, it.ID)
	}
	s.pend.items[it.ID] = it
	s.pl.put(it)
}

func (s *step) setStatus(st run.Status) {
	if s.status == st {
		return
	}
	s.status = st
	s.pend.patch.Status = st
}

func (s *step) answer(callID string, res tool.Result, isErr bool) {
	s.tr.answer(callID, s.red.result(res), isErr)
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

func (s *step) finishItem(it run.PlanItem, st run.PlanStatus, res tool.Result, isErr bool) {
	it.Status = st
	it.Result = recordOf(res, isErr)
	s.putItem(it)
	s.answer(it.CallID, res, isErr)
}
