// Command notes is the Keel program of crashtest's own tests: one agent
// whose one effect, post_note, POSTs a note to NOTES_URL with the
// operation id as Idempotency-Key. What the effect declares is set from
// outside, so a test can build each setup of issue 25 from one program:
//
//	NOTES_PROMISE  idempotent (keel.IdempotentByKey) or none
//	               (keel.PromisesNothing)
//	NOTES_COUNT    when set, a Count hook: GET NOTES_URL/count?key=ID
//	NOTES_PROMISE=memory
//	               no NOTES_URL: the notes live in a map in the
//	               program's memory, keyed by operation id, with a
//	               Lookup (keel.IdempotentByKey | keel.LookupByKey) — the
//	               in-process destination crashtest must name as such
//
// Otherwise it has no Lookup. The test's destination decides whether keys
// are kept.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/keelrun/keel"
)

type noteArgs struct {
	Text string `json:"text" jsonschema:"description=The note,minLength=1,maxLength=200"`
}

const script = `{"turns": [{"text": "Posting the note.", "tool_calls": [{"name": "post_note", "args": {"text": "hello"}}]}],
 "final": "The note is posted."}`

func main() {
	base := os.Getenv("NOTES_URL")
	spec := keel.EffectSpec[noteArgs]{Dispatch: func(ctx context.Context, opID string, a noteArgs) (keel.Outcome, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/notes", strings.NewReader(a.Text))
		if err != nil {
			return keel.Outcome{}, err
		}
		req.Header.Set("Idempotency-Key", opID)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return keel.Outcome{}, err
		}
		defer resp.Body.Close()
		var out struct{ ID string }
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
			return keel.Outcome{}, fmt.Errorf("notes: HTTP %d: %v", resp.StatusCode, err)
		}
		return keel.Outcome{ExternalID: out.ID}, nil
	}}
	switch p := os.Getenv("NOTES_PROMISE"); p {
	case "idempotent":
		spec.Promises = keel.IdempotentByKey
	case "none":
		spec.Promises = keel.PromisesNothing
	case "memory":
		spec = memoryNotes()
	default:
		fmt.Fprintf(os.Stderr, "notes: NOTES_PROMISE %q: want idempotent, none or memory\n", p)
		os.Exit(2)
	}
	if os.Getenv("NOTES_COUNT") != "" {
		spec.Count = func(ctx context.Context, opID string) (int, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/count?key="+url.QueryEscape(opID), nil)
			if err != nil {
				return 0, err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return 0, err
			}
			defer resp.Body.Close()
			var n int
			err = json.NewDecoder(resp.Body).Decode(&n)
			return n, err
		}
	}
	keel.Main(keel.Agent{Name: "notes", Instructions: "Post the note.", Model: keel.ScriptedModel([]byte(script)),
		Tools: []keel.Tool{keel.Effect("post_note", "Post a note. A person approves it.", spec)}})
}

// memoryNotes keeps its notes in a map of this process: what a scaffold's
// stand-in for a destination looks like before it is made to outlive the
// process.
func memoryNotes() keel.EffectSpec[noteArgs] {
	var mu sync.Mutex
	notes := map[string]string{}
	return keel.EffectSpec[noteArgs]{
		Dispatch: func(_ context.Context, opID string, _ noteArgs) (keel.Outcome, error) {
			mu.Lock()
			defer mu.Unlock()
			notes[opID] = "note_" + opID
			return keel.Outcome{ExternalID: notes[opID]}, nil
		},
		Lookup: func(_ context.Context, opID string) (keel.Outcome, bool, error) {
			mu.Lock()
			defer mu.Unlock()
			id, ok := notes[opID]
			return keel.Outcome{ExternalID: id}, ok, nil
		},
		Promises: keel.IdempotentByKey | keel.LookupByKey,
	}
}
