package run

import (
	"encoding/json"
	"testing"
	"time"
)

func chainOf(n int) []Event {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 123456789, time.UTC)
	evs := make([]Event, n)
	for i := range evs {
		evs[i] = Event{Seq: int64(i + 1), Type: EventToolProgress, Time: t0.Add(time.Duration(i) * time.Millisecond),
			Data: json.RawMessage(`{"i":` + string(rune('0'+i)) + `,"note":"café <&>"}`)}
	}
	Chain("run_1", "", evs)
	return evs
}

func TestVerifyChain(t *testing.T) {
	cases := []struct {
		name   string
		tamper func([]Event) []Event
		seq    int64
		kind   string
	}{
		{"Intact", func(e []Event) []Event { return e }, 0, ""},
		{"EditData", func(e []Event) []Event { e[2].Data = json.RawMessage(`{"i":9}`); return e }, 3, ChainEdited},
		{"EditType", func(e []Event) []Event { e[1].Type = EventOpSucceeded; return e }, 2, ChainEdited},
		{"EditTime", func(e []Event) []Event { e[0].Time = e[0].Time.Add(time.Nanosecond); return e }, 1, ChainEdited},
		{"Delete", func(e []Event) []Event { return append(e[:2:2], e[3:]...) }, 4, ChainDeleted},
		{"DeleteFirst", func(e []Event) []Event { return e[1:] }, 2, ChainDeleted},
		{"DeleteLast", func(e []Event) []Event { return e[:4] }, 4, ChainTruncated},
		{"Reorder", func(e []Event) []Event {
			e[2], e[3] = e[3], e[2]
			e[2].Seq, e[3].Seq = 3, 4
			return e
		}, 3, ChainReordered},
		{"Unhash", func(e []Event) []Event { e[3].Hash = ""; return e }, 4, ChainUnchained},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evs := chainOf(5)
			head := evs[4].Hash
			got := VerifyChain("run_1", tc.tamper(evs), 5, head)
			if tc.kind == "" {
				if len(got) != 0 {
					t.Fatalf("intact chain: %v", got)
				}
				return
			}
			if len(got) == 0 || got[0].Seq != tc.seq || got[0].Kind != tc.kind {
				t.Fatalf("problems %v, want first %s at seq %d", got, tc.kind, tc.seq)
			}
		})
	}
}

func TestVerifyChainLegacyPrefix(t *testing.T) {
	// Events written before the chain existed have no hash; the chain
	// starts at the first hashed one.
	evs := chainOf(4)
	evs[0].Hash, evs[0].PrevHash = "", ""
	evs[1].Hash, evs[1].PrevHash = "", ""
	Chain("run_1", "", evs[2:])
	if got := VerifyChain("run_1", evs, 4, evs[3].Hash); len(got) != 0 {
		t.Fatalf("legacy prefix: %v", got)
	}
}

// TestEventHashFixed pins the hashed form: an export verified offline must
// agree with it byte for byte (see README, Auditing a run).
func TestEventHashFixed(t *testing.T) {
	e := Event{RunID: "run_1", Type: EventRunCreated, Time: time.Date(2026, 12, 1, 9, 0, 0, 500000000, time.UTC),
		Data: json.RawMessage(`{"a":"é\n"}`)}
	want := HashBytes([]byte(`{"data":"{\"a\":\"é\\n\"}","operation_id":"","plan_item_id":"","prev_hash":"","run_id":"run_1","time":"2026-12-01T09:00:00.5Z","type":"run_created"}`))
	if got := EventHash(e); got != want {
		t.Fatalf("EventHash = %s, want %s", got, want)
	}
}

// A store that keeps one hash per commit derives the others on read: an
// edit of a derived event is found at the commit's stored hash, and the
// problem names the commit's span, which holds the edited event (issue 32
// item 7: an edit at 138 was named at 140 alone).
func TestVerifyChainNamesTheCommitSpan(t *testing.T) {
	for _, tc := range []struct {
		name         string
		edit         int // index of the edited event
		seq, through int64
		derived      []int // indexes whose hash the store derived
	}{
		{"derived event edited", 2, 2, 4, []int{1, 2}},
		{"stored event edited", 3, 2, 4, []int{1, 2}},
		{"every hash stored", 2, 3, 0, nil},
		{"first of the log derived", 0, 1, 3, []int{0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := chainOf(5)
			head := evs[4].Hash
			evs[tc.edit].Data = json.RawMessage(`{"i":9}`)
			for _, i := range tc.derived {
				evs[i].HashDerived = true
			}
			// What the store reads: a derived hash is the event's hash as
			// it now reads, chained from the one before.
			prev := ""
			for i := range evs {
				evs[i].PrevHash = prev
				if evs[i].HashDerived {
					evs[i].RunID = "run_1"
					evs[i].Hash = EventHash(evs[i])
				}
				prev = evs[i].Hash
			}
			got := VerifyChain("run_1", evs, 5, head)
			if len(got) == 0 || got[0].Seq != tc.seq || got[0].Through != tc.through || got[0].Kind != ChainEdited {
				t.Fatalf("problems %v, want edited at seq %d through %d", got, tc.seq, tc.through)
			}
			if tc.through != 0 && tc.edit+1 > int(tc.through) {
				t.Fatalf("the span %d..%d misses the edited seq %d", tc.seq, tc.through, tc.edit+1)
			}
		})
	}
}
