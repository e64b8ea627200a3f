package run

import (
	"bytes"
	"fmt"
	"time"
)

// The event log of a run is a hash chain: each event carries the hash of
// its predecessor (PrevHash) and its own (Hash), and the run row carries the
// head (LastSeq, LastHash). Stores set them as they append, in the write
// that appends. An event's hash covers everything the event says and the
// hash before it, so editing, deleting or reordering one event breaks the
// chain at that event (VerifyChain names it).
//
// It does not protect against someone who can rewrite the store and
// recomputes the chain and the run's head from the first changed event on:
// the chain is then whole again. Against that, keep the head somewhere that
// writer cannot reach: `keel verify` prints it, GET /v1/runs/{id}/audit
// exports it, and a copy compared later (a ticket, a signed e-mail, an S3
// object under object lock) pins every event up to it.

// EventTime is the form of an event's time in its hash and in an audit
// export: RFC 3339 in UTC with as many fractional digits as it has.
func EventTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// EventHash is the hex sha256 of the RFC 8785 form of the object
//
//	{"data": DATA, "operation_id": ..., "plan_item_id": ..., "prev_hash": ...,
//	 "run_id": ..., "time": EventTime(e.Time), "type": ...}
//
// where DATA is the event's data as the string of its stored bytes ("" when
// it has none). Every member is a string, so any JSON library that sorts
// keys and writes no whitespace nor \u escapes of non-ASCII characters makes
// the same bytes (Python: json.dumps(obj, sort_keys=True,
// separators=(",", ":"), ensure_ascii=False)). The seq is not hashed: an
// event's place is its link to the one before it.
func EventHash(e Event) string {
	var b bytes.Buffer
	fields := [...][2]string{ // in RFC 8785 order
		{"data", string(e.Data)},
		{"operation_id", e.OperationID},
		{"plan_item_id", e.PlanItemID},
		{"prev_hash", e.PrevHash},
		{"run_id", e.RunID},
		{"time", EventTime(e.Time)},
		{"type", string(e.Type)},
	}
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(&b, f[0])
		b.WriteByte(':')
		writeString(&b, f[1])
	}
	b.WriteByte('}')
	return HashBytes(b.Bytes())
}

// Chain sets RunID, PrevHash and Hash of events appended after an event
// whose hash is prev, in order, and returns the new head. Times must be set.
func Chain(runID, prev string, events []Event) string {
	for i := range events {
		events[i].RunID = runID
		events[i].PrevHash = prev
		events[i].Hash = EventHash(events[i])
		prev = events[i].Hash
	}
	return prev
}

// ChainProblem is one place where a run's log and its chain disagree.
// When the events before the one found wrong had derived hashes
// (Event.HashDerived), the change may be in any of them: Seq is then the
// first of that span and Through the event whose stored hash failed.
type ChainProblem struct {
	Seq     int64  `json:"seq"`
	Through int64  `json:"through,omitempty"`
	Kind    string `json:"kind"` // edited, deleted, reordered, truncated, unchained
	Text    string `json:"text"`
}

func (p ChainProblem) String() string {
	if p.Through > p.Seq {
		return fmt.Sprintf("seqs %d..%d: %s: %s", p.Seq, p.Through, p.Kind, p.Text)
	}
	return fmt.Sprintf("seq %d: %s: %s", p.Seq, p.Kind, p.Text)
}

// spanned widens problems found at a stored hash to the derived events
// right before it: the change is in one of them or at the event itself.
func spanned(problems []ChainProblem, events []Event) []ChainProblem {
	at := make(map[int64]int, len(events))
	for i, e := range events {
		at[e.Seq] = i
	}
	for k, p := range problems {
		i, ok := at[p.Seq]
		if !ok || (p.Kind != ChainEdited && p.Kind != ChainReordered) || events[i].HashDerived {
			continue
		}
		first := i
		for first > 0 && events[first-1].HashDerived && events[first-1].Seq == events[first].Seq-1 {
			first--
		}
		if first < i {
			problems[k].Seq, problems[k].Through = events[first].Seq, p.Seq
			problems[k].Text = fmt.Sprintf("one of events %d..%d: only seq %d's hash is stored (the others are derived from it), so the change is in one of them; %s",
				events[first].Seq, p.Seq, p.Seq, p.Text)
		}
	}
	return problems
}

// The kinds of ChainProblem.
const (
	ChainEdited    = "edited"    // the event does not hash to its Hash
	ChainDeleted   = "deleted"   // events are missing before this one
	ChainReordered = "reordered" // the event follows another than the one before it
	ChainTruncated = "truncated" // the log ends before the run's head
	ChainUnchained = "unchained" // the event has no hash though a chained one came before
)

// VerifyChain checks a run's whole log, in seq order, against its head
// (the run's LastSeq and LastHash). Events stored before the chain existed
// (no Hash, before every chained event) are accepted as they are; the first
// chained event then starts from "". It returns nil when the chain holds.
func VerifyChain(runID string, events []Event, headSeq int64, headHash string) []ChainProblem {
	var out []ChainProblem
	where := map[string]int64{}
	for _, e := range events {
		if e.Hash != "" {
			where[e.Hash] = e.Seq
		}
	}
	prev, prevSeq, chained := "", int64(0), false
	for _, e := range events {
		if e.Seq != prevSeq+1 {
			out = append(out, ChainProblem{Seq: e.Seq, Kind: ChainDeleted, Text: fmt.Sprintf("events %d..%d are missing", prevSeq+1, e.Seq-1)})
		}
		if e.Hash == "" && !chained {
			prevSeq = e.Seq
			continue
		}
		switch {
		case e.Hash == "":
			out = append(out, ChainProblem{Seq: e.Seq, Kind: ChainUnchained, Text: "the event has no hash, though the log before it is chained"})
		case e.RunID != runID || EventHash(e) != e.Hash:
			// A store may derive PrevHash from the event before (SQLite
			// does not store it): an intact event moved elsewhere then fails
			// its hash. It is the one whose hash another event's makes whole.
			// An event after a gap (reported as deleted above) cannot hash
			// with a derived PrevHash either: that is not an edit.
			at, moved := linkedTo(e, where, len(out))
			switch {
			case moved && at != prevSeq:
				out = append(out, ChainProblem{Seq: e.Seq, Kind: ChainReordered, Text: fmt.Sprintf("the event follows the one now at seq %d, not seq %d", at, prevSeq)})
			case moved || e.Seq == prevSeq+1:
				out = append(out, ChainProblem{Seq: e.Seq, Kind: ChainEdited, Text: "the event's content does not match its hash " + e.Hash})
			}
		case e.PrevHash != prev:
			if at, ok := where[e.PrevHash]; ok && at != e.Seq {
				out = append(out, ChainProblem{Seq: e.Seq, Kind: ChainReordered, Text: fmt.Sprintf("the event follows the one now at seq %d, not seq %d", at, prevSeq)})
			} else if e.Seq == prevSeq+1 {
				out = append(out, ChainProblem{Seq: e.Seq, Kind: ChainDeleted, Text: fmt.Sprintf("the event follows %s, which is not in the log: an event before it was removed", e.PrevHash)})
			}
		}
		chained = chained || e.Hash != ""
		prev, prevSeq = e.Hash, e.Seq
	}
	if prevSeq != headSeq || (chained && prev != headHash) {
		out = append(out, ChainProblem{Seq: prevSeq, Kind: ChainTruncated, Text: fmt.Sprintf("the log ends at seq %d (%s) but the run's head is seq %d (%s)", prevSeq, prev, headSeq, headHash)})
	}
	return spanned(out, events)
}

// maxRelinks bounds the problems VerifyChain tries to explain as moved
// events: each try hashes the event once per event of the log.
const maxRelinks = 16

// linkedTo finds the seq of the event whose hash, as e's PrevHash, makes
// e hash to its Hash; problems is how many were found so far.
func linkedTo(e Event, where map[string]int64, problems int) (int64, bool) {
	if problems >= maxRelinks || e.RunID == "" {
		return 0, false
	}
	for h, at := range where {
		if h == e.PrevHash || h == e.Hash {
			continue
		}
		c := e
		c.PrevHash = h
		if EventHash(c) == e.Hash {
			return at, true
		}
	}
	return 0, false
}
