// This program is a Keel deployment of one agent. Every role of it is this
// one binary: `go run . dev` runs it on this machine, `go run . run`,
// `approve`, `events` and the other client commands talk to its API, and
// on AWS each Lambda function and the Fargate task run it with KEEL_ROLE
// set.
package main

import (
	"os"
	"path/filepath"

	"github.com/keelrun/keel"
)

// main is wiring only: build the clients the tools need, build the agent,
// hand it to Keel. Read each client's configuration and credentials here
// (from the environment or a secret store) and pass them to its
// constructor; a tool never gets a credential from the model.
//
// keel.MainFunc calls the function only for the commands that run the
// agent (dev, crashtest, the deployed roles), so `run`, `approve` and the
// other client commands need none of its configuration.
func main() {
	keel.MainFunc(func() ([]keel.Agent, error) {
		orders := sampleOrders()                       // your order database or API client
		outbox, err := NewOutbox(outboxDir(os.Getenv)) // your email client, e.g. mail.New(os.Getenv("MAIL_API_KEY"))
		if err != nil {
			return nil, err
		}
		return []keel.Agent{newAgent(orders, outbox)}, nil
	})
}

// outboxDir is where the outbox keeps its emails: OUTBOX_DIR, or outbox/
// in Keel's data directory (KEEL_DATA_DIR, which `dev` sets to its
// --data-dir; .keel when unset).
func outboxDir(getenv func(string) string) string {
	if d := getenv("OUTBOX_DIR"); d != "" {
		return d
	}
	data := getenv("KEEL_DATA_DIR")
	if data == "" {
		data = ".keel"
	}
	return filepath.Join(data, "outbox")
}
