package main

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/keelrun/keel"
)

// agentName is the name runs use: `go run . run assistant "..."`.
const agentName = "assistant"

// script drives the scripted model (see script.json): look the order up,
// then email its customer. It lets the agent run and be tested offline,
// with no model and no key.
//
//go:embed script.json
var script []byte

// newAgent builds the agent around the clients main built. Tools reach
// their clients through the closure, never through their arguments: the
// model writes the arguments, and Keel stores them in the event log and
// hashes them for approvals.
func newAgent(orders Orders, outbox *Outbox) keel.Agent {
	return keel.Agent{
		Name:         agentName,
		Instructions: "You answer customers about their orders. Look the order up, then email the customer its status.",
		// A real model instead of the script:
		//
		//	Model: keel.ModelSpec("anthropic:claude-sonnet-4-5"),
		//
		// The runtime builds it with ANTHROPIC_API_KEY from the environment
		// (under `go run . dev`) or from Secrets Manager on AWS
		// (KEEL_MODEL_SECRET_ARN); never put a key in the code. KEEL_MODEL,
		// when set, overrides this field at run time.
		Model: keel.ScriptedModel(script),
		Tools: []keel.Tool{
			keel.ReadOnly("find_order", "Look an order up by its id: its status and the customer's email.", orders.find),
			keel.Effect("send_email", "Email a customer. A person approves each email before it is sent.", keel.EffectSpec[emailArgs]{
				Dispatch:    outbox.Send,
				Lookup:      outbox.Lookup,
				Promises:    keel.IdempotentByKey | keel.LookupByKey,
				Destination: "outbox",
			}),
		},
		Limits: keel.Limits{MaxSteps: 20},
	}
}

// findArgs are find_order's arguments. The JSON Schema the model sees is
// reflected from the struct: fields named by their json tags, required
// unless omitempty, constrained by the jsonschema tags.
type findArgs struct {
	OrderID string `json:"order_id" jsonschema:"description=The order id such as ord_1001,minLength=1,maxLength=64"`
}

// Order is what find_order tells the model.
type Order struct {
	ID     string `json:"id"`
	Email  string `json:"email"`
	Status string `json:"status"`
}

// Orders stands for a read-only client (a database, an API). A read-only
// tool may run again for the same call after a crash, so it must not
// change anything.
type Orders map[string]Order

func sampleOrders() Orders {
	return Orders{"ord_1001": {ID: "ord_1001", Email: "ada@example.com", Status: "shipped"}}
}

func (o Orders) find(_ context.Context, a findArgs) (Order, error) {
	order, ok := o[a.OrderID]
	if !ok {
		// Shown to the model as a failed call; the run goes on.
		return Order{}, fmt.Errorf("no order %q", a.OrderID)
	}
	return order, nil
}

// emailArgs are send_email's arguments: what a person approves.
type emailArgs struct {
	To      string `json:"to" jsonschema:"description=The customer's email address,minLength=3,maxLength=254"`
	Subject string `json:"subject" jsonschema:"minLength=1,maxLength=200"`
	Body    string `json:"body" jsonschema:"minLength=1,maxLength=5000"`
}

// Email is one email the outbox sent.
type Email struct {
	ID          string    `json:"id"`
	OperationID string    `json:"operation_id"`
	To          string    `json:"to"`
	Subject     string    `json:"subject"`
	Body        string    `json:"body"`
	SentAt      time.Time `json:"sent_at"`
}

// Outbox stands for the destination of the effect: an email service that
// takes an idempotency key and can be asked by it. Replace it with your
// service's client; send the operation id as its idempotency key (an
// Idempotency-Key header, a unique column) and declare in Promises only
// what the service really does, because that decides what Keel does with
// an email whose outcome it does not know after a crash or a timeout:
// send it again with the same key (IdempotentByKey), ask first
// (LookupByKey), or hand the run to a person (keel.PromisesNothing).
//
// This one is a directory with one file per email, named by operation id.
// Like a real service it lives outside the program's process: an email
// sent just before a crash is still there for the next process to find,
// and for `crashtest`, which asks it from a process of its own. (A map in
// memory would not do: every new process would see it empty.) A second
// Send with the same id sends nothing and answers the first email.
type Outbox struct {
	dir string
}

// NewOutbox returns the outbox kept in dir, creating it if need be.
func NewOutbox(dir string) (*Outbox, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	return &Outbox{dir: dir}, nil
}

// Send sends the email once per operation id. Keel calls it only after a
// person approved these exact arguments and the intent is durably
// recorded.
func (o *Outbox) Send(ctx context.Context, operationID string, a emailArgs) (keel.Outcome, error) {
	if out, found, err := o.Lookup(ctx, operationID); err != nil || found {
		return out, err
	}
	if !strings.Contains(a.To, "@") {
		// A definite refusal: nothing was sent, and sending again would
		// not change that.
		return keel.Outcome{}, keel.Reject("%q is not an email address", a.To)
	}
	sum := sha256.Sum256([]byte(operationID))
	e := Email{ID: "msg_" + hex.EncodeToString(sum[:6]), OperationID: operationID, To: a.To, Subject: a.Subject, Body: a.Body, SentAt: time.Now().UTC()}
	b, err := json.Marshal(e)
	if err != nil {
		return keel.Outcome{}, err
	}
	// Written aside, then linked under the operation id: the link fails
	// if the email exists, so of two sends of one id only one is kept.
	tmp, err := os.CreateTemp(o.dir, ".sending-*")
	if err != nil {
		return keel.Outcome{}, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return keel.Outcome{}, err
	}
	if err := errors.Join(tmp.Sync(), tmp.Close()); err != nil {
		return keel.Outcome{}, err
	}
	path, err := o.path(operationID)
	if err != nil {
		return keel.Outcome{}, err
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return keel.Outcome{}, err
	}
	out, _, err := o.Lookup(ctx, operationID)
	return out, err
}

// Lookup says whether the email of operationID was sent.
func (o *Outbox) Lookup(_ context.Context, operationID string) (keel.Outcome, bool, error) {
	path, err := o.path(operationID)
	if err != nil {
		return keel.Outcome{}, false, err
	}
	e, err := readEmail(path)
	if errors.Is(err, fs.ErrNotExist) {
		return keel.Outcome{}, false, nil
	}
	if err != nil {
		return keel.Outcome{}, false, err
	}
	return keel.Outcome{ExternalID: e.ID}, true, nil
}

// Sent returns the emails sent, oldest first.
func (o *Outbox) Sent() ([]Email, error) {
	names, err := filepath.Glob(filepath.Join(o.dir, "*.json"))
	if err != nil {
		return nil, err
	}
	out := make([]Email, 0, len(names))
	for _, n := range names {
		e, err := readEmail(n)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Email) int { return a.SentAt.Compare(b.SentAt) })
	return out, nil
}

// path is the file of operationID's email.
func (o *Outbox) path(operationID string) (string, error) {
	if operationID == "" || strings.ContainsAny(operationID, `/\`) || strings.HasPrefix(operationID, ".") {
		return "", fmt.Errorf("outbox: operation id %q cannot name a file", operationID)
	}
	return filepath.Join(o.dir, operationID+".json"), nil
}

func readEmail(path string) (Email, error) {
	var e Email
	b, err := os.ReadFile(path)
	if err != nil {
		return e, err
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, fmt.Errorf("outbox: %s: %w", path, err)
	}
	return e, nil
}
