// This program is a Keel deployment of one agent. Every role of it is this
// one binary: `go run . dev` runs it on this machine, `go run . run`,
// `approve`, `events` and the other client commands talk to its API, and
// on AWS each Lambda function and the Fargate task run it with KEEL_ROLE
// set.
package main

import "github.com/keelrun/keel"

// main is wiring only: build the clients the tools need, build the agent,
// hand it to keel.Main. Read each client's configuration and credentials
// here (from the environment or a secret store) and pass them to its
// constructor; a tool never gets a credential from the model.
func main() {
	orders := sampleOrders() // your order database or API client
	outbox := NewOutbox()    // your email client, e.g. mail.New(os.Getenv("MAIL_API_KEY"))
	keel.Main(newAgent(orders, outbox))
}
