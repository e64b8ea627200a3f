package tickets_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/keelrun/keel/examples/triage/tickets"
)

// An update sent twice under one idempotency key — as Keel re-sends an
// effect whose answer was lost — is applied once and answered the same.
func Example() {
	srv, _ := tickets.NewServer("secret-token", tickets.SampleData())
	hs := httptest.NewServer(srv)
	defer hs.Close()
	c, _ := tickets.NewClient(hs.URL, "secret-token", nil)

	ctx := context.Background()
	u := tickets.Update{Status: tickets.StatusPending, Reply: "We are on it."}
	a, _ := c.Update(ctx, "T-1001", "op_42", u)
	b, _ := c.Update(ctx, "T-1001", "op_42", u)
	fmt.Println(a.UpdateID, b.UpdateID, "applied:", len(srv.Applied()), "requests:", srv.Requests("op_42"))
	// Output:
	// upd-1 upd-1 applied: 1 requests: 2
}
