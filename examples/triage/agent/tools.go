package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/keelrun/keel"
	"github.com/keelrun/keel/examples/triage/tickets"
)

// SearchArgs are search_tickets' arguments.
type SearchArgs struct {
	TicketID string `json:"ticket_id" jsonschema:"description=The ticket to triage (e.g. T-1001),minLength=1,maxLength=32"`
	Limit    int    `json:"limit,omitempty" jsonschema:"description=At most this many similar tickets (default 5),minimum=1,maximum=20"`
}

// Summary is a similar ticket as the model sees it.
type Summary struct {
	ID      string `json:"id"`
	Subject string `json:"subject"`
}

// SearchResult is what search_tickets finds: the ticket (its customer, for
// read_customer) and the open tickets that share a tag with it.
type SearchResult struct {
	TicketID   string    `json:"ticket_id"`
	CustomerID string    `json:"customer_id"`
	Subject    string    `json:"subject"`
	Body       string    `json:"body"`
	Status     string    `json:"status"`
	Similar    []Summary `json:"similar"`
}

// CustomerArgs are read_customer's arguments.
type CustomerArgs struct {
	CustomerID string `json:"customer_id" jsonschema:"description=The customer's id (a ticket's customer_id),minLength=1,maxLength=32"`
}

// UpdateArgs are update_ticket's arguments: what a person approves.
type UpdateArgs struct {
	TicketID string `json:"ticket_id" jsonschema:"description=The ticket to update,minLength=1,maxLength=32"`
	Status   string `json:"status" jsonschema:"description=The ticket's new status,enum=open,enum=pending,enum=solved"`
	Reply    string `json:"reply" jsonschema:"description=The reply sent to the customer,minLength=1,maxLength=2000"`
}

// Tools are the triage agent's tools on the ticket service c:
// search_tickets (read-only), read_customer (confirm-once: private data)
// and update_ticket (an effect, idempotent by key, without lookup).
func Tools(c *tickets.Client) []keel.Tool {
	return []keel.Tool{
		keel.ReadOnly("search_tickets", "Read a ticket and list the open tickets similar to it.", Search(c)),
		keel.ConfirmOnce("read_customer", "Read a customer's private profile: name, email, plan, support notes. A person allows it once per session.", ReadCustomer(c)),
		keel.Effect("update_ticket", "Send a reply to the customer and set the ticket's status. A person approves the exact update.", keel.EffectSpec[UpdateArgs]{
			Dispatch:    UpdateTicket(c),
			Promises:    keel.IdempotentByKey,
			Destination: "tickets",
			// For keel crashtest: the service counts the updates applied
			// under each key.
			Count: func(ctx context.Context, operationID string) (int, error) {
				a, err := c.AppliedUnder(ctx, operationID)
				return len(a), err
			},
		}),
	}
}

// Search is search_tickets.
func Search(c *tickets.Client) func(context.Context, SearchArgs) (SearchResult, error) {
	return func(ctx context.Context, a SearchArgs) (SearchResult, error) {
		t, err := c.Ticket(ctx, a.TicketID)
		if err != nil {
			return SearchResult{}, err
		}
		limit := a.Limit
		if limit == 0 {
			limit = 5
		}
		sim, err := c.Similar(ctx, a.TicketID, limit)
		if err != nil {
			return SearchResult{}, err
		}
		out := SearchResult{TicketID: t.ID, CustomerID: t.CustomerID, Subject: t.Subject, Body: t.Body, Status: t.Status, Similar: []Summary{}}
		for _, s := range sim {
			out.Similar = append(out.Similar, Summary{ID: s.ID, Subject: s.Subject})
		}
		return out, nil
	}
}

// ReadCustomer is read_customer.
func ReadCustomer(c *tickets.Client) func(context.Context, CustomerArgs) (tickets.Customer, error) {
	return func(ctx context.Context, a CustomerArgs) (tickets.Customer, error) {
		return c.Customer(ctx, a.CustomerID)
	}
}

// UpdateTicket is update_ticket's Dispatch: the update under operationID
// as its Idempotency-Key. A definite refusal of the service (a 4xx: no
// such ticket, a closed one) is a keel.Reject; any other failure leaves
// the outcome unknown, and Keel sends the same update again with the same
// key.
func UpdateTicket(c *tickets.Client) func(context.Context, string, UpdateArgs) (keel.Outcome, error) {
	return func(ctx context.Context, operationID string, a UpdateArgs) (keel.Outcome, error) {
		applied, err := c.Update(ctx, a.TicketID, operationID, tickets.Update{Status: a.Status, Reply: a.Reply})
		var se *tickets.StatusError
		if errors.As(err, &se) && se.Definite() {
			return keel.Outcome{}, keel.Reject("ticket %s: %d %s", a.TicketID, se.Code, se.Message)
		}
		if err != nil {
			return keel.Outcome{}, fmt.Errorf("update ticket %s: %w", a.TicketID, err)
		}
		res, err := json.Marshal(applied)
		if err != nil {
			return keel.Outcome{}, err
		}
		return keel.Outcome{ExternalID: applied.UpdateID, Result: res}, nil
	}
}
