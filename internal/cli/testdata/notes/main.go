// Command notes is the Keel program of crashtest's own tests: one agent
// whose one effect, post_note, POSTs a note to NOTES_URL with the
// operation id as Idempotency-Key. What the effect declares is set from
// outside, so a test can build each setup of issue 25 from one program:
//
//	NOTES_PROMISE  idempotent (keel.IdempotentByKey) or none
//	               (keel.PromisesNothing)
//	NOTES_COUNT    when set, a Count hook: GET NOTES_URL/count?key=ID
//
// It has no Lookup. The test's destination decides whether keys are kept.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

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
	default:
		fmt.Fprintf(os.Stderr, "notes: NOTES_PROMISE %q: want idempotent or none\n", p)
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
