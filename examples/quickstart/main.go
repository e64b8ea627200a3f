package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/keelrun/keel"
)

type Note struct {
	To   string `json:"to" jsonschema:"description=E-mail address"`
	Body string `json:"body" jsonschema:"minLength=1,maxLength=2000"`
}

// The outbox stands for your mail service: one file per operation id, so
// sending twice is a no-op and a send can be looked up.
var outbox = filepath.Join(os.TempDir(), "keel-outbox")

func send(_ context.Context, opID string, n Note) (keel.Outcome, error) {
	tmp := filepath.Join(outbox, "."+opID)
	err := errors.Join(os.MkdirAll(outbox, 0o755), os.WriteFile(tmp, []byte("To: "+n.To+"\n\n"+n.Body), 0o644))
	if err == nil {
		if err = os.Link(tmp, filepath.Join(outbox, opID)); errors.Is(err, os.ErrExist) {
			err = nil
		}
	}
	os.Remove(tmp)
	return keel.Outcome{ExternalID: opID}, err
}

func sent(_ context.Context, opID string) (keel.Outcome, bool, error) {
	_, err := os.Stat(filepath.Join(outbox, opID))
	if errors.Is(err, os.ErrNotExist) {
		return keel.Outcome{}, false, nil
	}
	return keel.Outcome{ExternalID: opID}, err == nil, err
}

func main() {
	keel.Main(keel.Agent{
		Name:         "mailer",
		Instructions: "Send the note the user asks for.",
		Model:        keel.ModelSpec("anthropic:claude-sonnet-4-5"),
		Tools: []keel.Tool{
			keel.Effect("send_note", "Send a note by e-mail.", keel.EffectSpec[Note]{
				Dispatch: send, Lookup: sent, Promises: keel.IdempotentByKey | keel.LookupByKey,
			}),
		},
		Limits: keel.Limits{MaxSteps: 20, MaxSpendMicroUSD: 500_000}, // 0.50 USD
	})
}
