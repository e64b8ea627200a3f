package harnesstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// LedgerOptions are what a Ledger promises and how it fails. The zero
// value promises nothing and never fails: the "none" destination, whose
// unknown outcome only a person can settle.
type LedgerOptions struct {
	// Lookup: Find answers whether an idempotency key was recorded. A
	// Ledger without it refuses to be asked (the harness must not ask a
	// destination whose contract has no lookup).
	Lookup bool
	// Idempotent: a Record under the key of an earlier one answers that
	// one and records nothing; without it every Record is a new entry.
	Idempotent bool
	// LoseResponses: the first N new entries are recorded, then answered
	// with ErrLostResponse, as a connection that drops after the
	// destination acted.
	LoseResponses int
	// Hang: after recording a new entry, the Ledger answers nothing for
	// Hang (or until the call's context ends), then an error, as a
	// request that times out after the destination acted.
	Hang time.Duration
}

// ErrLostResponse is the answer to a Record whose response was lost
// (LedgerOptions.LoseResponses): the entry was recorded.
var ErrLostResponse = errors.New("connection reset before the response")

// Entry is one effect a Ledger received.
type Entry struct {
	// ID is the Ledger's own id ("entry-1", "entry-2", ...): the outcome's
	// ExternalID.
	ID      string
	Key     string
	Content []byte
}

// Ledger is an external destination in memory: it records every effect it
// receives, in order, and keeps the promises of its LedgerOptions. Safe
// for concurrent use.
type Ledger struct {
	name    string
	opt     LedgerOptions
	mu      sync.Mutex
	entries []Entry
	lost    int
}

// NewLedger is an empty Ledger; name is what operation records call it.
func NewLedger(name string, opt LedgerOptions) *Ledger { return &Ledger{name: name, opt: opt} }

// Name is the destination's name in operation records.
func (l *Ledger) Name() string { return l.name }

// Contract is what the Ledger promises, as the operation protocol reads it.
func (l *Ledger) Contract() ops.Contract {
	return ops.Contract{Idempotent: l.opt.Idempotent, Lookup: l.opt.Lookup}
}

// Record makes the effect: content recorded under key. An error other
// than the context's leaves the outcome unknown to the caller, as the
// protocol must assume; the Ledger itself always knows (Entries).
func (l *Ledger) Record(ctx context.Context, key string, content []byte) (ops.Outcome, error) {
	l.mu.Lock()
	if en, ok := l.find(key); ok && l.opt.Idempotent {
		l.mu.Unlock()
		return en.outcome(), nil
	}
	en := Entry{ID: fmt.Sprintf("entry-%d", len(l.entries)+1), Key: key, Content: append([]byte(nil), content...)}
	l.entries = append(l.entries, en)
	lose := l.lost < l.opt.LoseResponses
	if lose {
		l.lost++
	}
	l.mu.Unlock()
	if lose {
		return ops.Outcome{}, fmt.Errorf("ledger %s: %w", l.name, ErrLostResponse)
	}
	if l.opt.Hang > 0 {
		select {
		case <-ctx.Done():
			return ops.Outcome{}, ctx.Err()
		case <-time.After(l.opt.Hang):
			return ops.Outcome{}, fmt.Errorf("ledger %s: no answer within %s", l.name, l.opt.Hang)
		}
	}
	return en.outcome(), nil
}

// Find reports whether an effect was recorded under key (the first one).
func (l *Ledger) Find(_ context.Context, key string) (ops.Outcome, bool, error) {
	if !l.opt.Lookup {
		return ops.Outcome{}, false, fmt.Errorf("ledger %s offers no lookup: the harness asked against its contract", l.name)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	en, ok := l.find(key)
	return en.outcome(), ok, nil
}

func (l *Ledger) find(key string) (Entry, bool) {
	for _, en := range l.entries {
		if en.Key == key {
			return en, true
		}
	}
	return Entry{}, false
}

// Entries are the effects received, in order: the ground truth a test
// counts ("published exactly once").
func (l *Ledger) Entries() []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Entry(nil), l.entries...)
}

func (en Entry) outcome() ops.Outcome {
	if en.ID == "" {
		return ops.Outcome{}
	}
	res, _ := json.Marshal(map[string]string{"id": en.ID, "key": en.Key, "sha256": run.HashBytes(en.Content)})
	return ops.Outcome{ExternalID: en.ID, Result: res}
}

var _ tool.Effectful = Note{}

// Note is the effectful tool "note": a call records its text in To. Mode
// is its permission mode (mutating: every call is approved by its args
// hash; confirm_once: once a session). Its intent names the text's hash.
type Note struct {
	Mode run.Mode
	To   *Ledger
}

// Info describes the tool: one required, non-empty "text".
func (n Note) Info() tool.Info {
	return tool.Info{Name: "note", Mode: n.Mode, Description: "publish a note",
		Schema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","minLength":1}},"required":["text"],"additionalProperties":false}`)}
}

// Run is never called for an effect; it fails to show it.
func (n Note) Run(context.Context, tool.Call) (tool.Result, error) {
	return tool.Result{}, errors.New("note is an effect: the harness dispatches it")
}

// Name is the Ledger's.
func (n Note) Name() string { return n.To.Name() }

// Contract is the Ledger's.
func (n Note) Contract() ops.Contract { return n.To.Contract() }

func (n Note) text(args json.RawMessage) string {
	var a struct{ Text string }
	_ = json.Unmarshal(args, &a) // the harness validated args against Info's schema
	return a.Text
}

// Intent names the text's hash.
func (n Note) Intent(_ context.Context, c tool.Call) (tool.Intent, error) {
	return tool.Intent{ArtifactHash: run.HashBytes([]byte(n.text(c.Args)))}, nil
}

// Dispatch records the text under the operation's idempotency key.
func (n Note) Dispatch(ctx context.Context, op run.Operation) (ops.Outcome, error) {
	return n.To.Record(ctx, op.IdempotencyKey, []byte(n.text(op.Args)))
}

// Lookup asks the Ledger for the operation's idempotency key.
func (n Note) Lookup(ctx context.Context, op run.Operation) (ops.Outcome, bool, error) {
	return n.To.Find(ctx, op.IdempotencyKey)
}

// Describe tells the model the entry's id.
func (n Note) Describe(op run.Operation) tool.Result {
	return tool.Result{Content: "published " + op.ExternalID}
}
