package tickets_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/keelrun/keel/examples/triage/tickets"
)

const token = "tk_test_0123456789"

func newService(t *testing.T) (*tickets.Server, *httptest.Server) {
	t.Helper()
	s, err := tickets.NewServer(token, tickets.SampleData())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs
}

func newClient(t *testing.T, url, tok string) *tickets.Client {
	t.Helper()
	c, err := tickets.NewClient(url, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestUpdateOncePerKey: the same update under the same key, sent
// sequentially and concurrently, is applied once and answered the same.
func TestUpdateOncePerKey(t *testing.T) {
	s, hs := newService(t)
	c := newClient(t, hs.URL, token)
	ctx := context.Background()
	u := tickets.Update{Status: tickets.StatusPending, Reply: "We are looking into it."}

	first, err := c.Update(ctx, "T-1001", "op_1", u)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	answers := make([]tickets.Applied, 8)
	errs := make([]error, 8)
	for i := range answers {
		wg.Go(func() { answers[i], errs[i] = c.Update(ctx, "T-1001", "op_1", u) })
	}
	wg.Wait()
	for i := range answers {
		if errs[i] != nil || answers[i] != first {
			t.Fatalf("repeat %d: %+v, %v; want %+v", i, answers[i], errs[i], first)
		}
	}
	if got := s.Applied(); len(got) != 1 || got[0] != first {
		t.Fatalf("applied %+v, want only %+v", got, first)
	}
	if n, all := s.Requests("op_1"), s.UpdateRequests(); n != 9 || all != 9 {
		t.Fatalf("requests with op_1: %d of %d, want 9 of 9", n, all)
	}
	tk, _ := s.Ticket("T-1001")
	if tk.Status != tickets.StatusPending || len(tk.Replies) != 1 {
		t.Fatalf("ticket %+v", tk)
	}

	// Another key is another update.
	if _, err := c.Update(ctx, "T-1001", "op_2", tickets.Update{Status: tickets.StatusSolved, Reply: "Fixed."}); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Applied()); n != 2 {
		t.Fatalf("applied %d, want 2", n)
	}
}

// TestUpdateRefused: every refusal is a definite *StatusError and applies
// nothing.
func TestUpdateRefused(t *testing.T) {
	tests := []struct {
		name   string
		ticket string
		key    string
		update tickets.Update
		code   int
	}{
		{name: "unknown ticket", ticket: "T-9999", key: "k1", update: tickets.Update{Status: "pending", Reply: "hi"}, code: 404},
		{name: "closed ticket", ticket: "T-1003", key: "k2", update: tickets.Update{Status: "pending", Reply: "hi"}, code: 422},
		{name: "unknown status", ticket: "T-1001", key: "k3", update: tickets.Update{Status: "escalated", Reply: "hi"}, code: 422},
		{name: "closing is not an update", ticket: "T-1001", key: "k4", update: tickets.Update{Status: "closed", Reply: "hi"}, code: 422},
		{name: "empty reply", ticket: "T-1001", key: "k5", update: tickets.Update{Status: "pending"}, code: 422},
		{name: "reply too long", ticket: "T-1001", key: "k6", update: tickets.Update{Status: "pending", Reply: strings.Repeat("é", tickets.MaxReply+1)}, code: 422},
		{name: "no idempotency key", ticket: "T-1001", key: "", update: tickets.Update{Status: "pending", Reply: "hi"}, code: 400},
		{name: "key too long", ticket: "T-1001", key: strings.Repeat("k", 256), update: tickets.Update{Status: "pending", Reply: "hi"}, code: 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, hs := newService(t)
			_, err := newClient(t, hs.URL, token).Update(context.Background(), tc.ticket, tc.key, tc.update)
			var se *tickets.StatusError
			if !errors.As(err, &se) || se.Code != tc.code || !se.Definite() {
				t.Fatalf("got %v, want a definite %d", err, tc.code)
			}
			if n := len(s.Applied()); n != 0 {
				t.Fatalf("applied %d updates", n)
			}
		})
	}
}

// TestKeyReusedForAnotherUpdate: a key names one update; the service
// refuses it for another instead of answering the first one's result.
func TestKeyReusedForAnotherUpdate(t *testing.T) {
	s, hs := newService(t)
	c := newClient(t, hs.URL, token)
	ctx := context.Background()
	if _, err := c.Update(ctx, "T-1001", "k", tickets.Update{Status: "pending", Reply: "one"}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Update(ctx, "T-1001", "k", tickets.Update{Status: "solved", Reply: "two"})
	var se *tickets.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusUnprocessableEntity {
		t.Fatalf("got %v, want 422", err)
	}
	if n := len(s.Applied()); n != 1 {
		t.Fatalf("applied %d, want 1", n)
	}
}

// TestToken: every endpoint needs the bearer token.
func TestToken(t *testing.T) {
	s, hs := newService(t)
	ctx := context.Background()
	for name, tok := range map[string]string{"wrong token": "tk_other", "token prefix": token[:5]} {
		t.Run(name, func(t *testing.T) {
			c := newClient(t, hs.URL, tok)
			calls := map[string]func() error{
				"ticket":   func() error { _, err := c.Ticket(ctx, "T-1001"); return err },
				"similar":  func() error { _, err := c.Similar(ctx, "T-1001", 3); return err },
				"customer": func() error { _, err := c.Customer(ctx, "c-17"); return err },
				"update": func() error {
					_, err := c.Update(ctx, "T-1001", "k", tickets.Update{Status: "pending", Reply: "hi"})
					return err
				},
			}
			for call, f := range calls {
				var se *tickets.StatusError
				if err := f(); !errors.As(err, &se) || se.Code != http.StatusUnauthorized {
					t.Errorf("%s: %v, want 401", call, err)
				}
			}
		})
	}
	for name, h := range map[string]string{"no header": "", "basic": "Basic " + token, "bare token": token} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, hs.URL+"/tickets/T-1001", nil)
			if h != "" {
				req.Header.Set("Authorization", h)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
				t.Fatalf("status %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
	if n, r := len(s.Applied()), s.UpdateRequests(); n != 0 || r != 0 {
		t.Fatalf("unauthenticated updates: %d applied, %d counted", n, r)
	}
}

// TestReads: a ticket, its similar open tickets, a customer.
func TestReads(t *testing.T) {
	_, hs := newService(t)
	c := newClient(t, hs.URL, token)
	ctx := context.Background()
	tk, err := c.Ticket(ctx, "T-1001")
	if err != nil || tk.CustomerID != "c-17" {
		t.Fatalf("ticket %+v, %v", tk, err)
	}
	sim, err := c.Similar(ctx, "T-1001", 5)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range sim {
		ids = append(ids, s.ID)
	}
	// T-1005 shares "export" but is solved; T-1003 is closed.
	if strings.Join(ids, ",") != "T-1002,T-1004" {
		t.Fatalf("similar %v", ids)
	}
	if sim, err := c.Similar(ctx, "T-1001", 1); err != nil || len(sim) != 1 {
		t.Fatalf("similar with limit 1: %v, %v", sim, err)
	}
	cu, err := c.Customer(ctx, "c-17")
	if err != nil || cu.Name != "Ada Ortiz" {
		t.Fatalf("customer %+v, %v", cu, err)
	}
	var se *tickets.StatusError
	if _, err := c.Customer(ctx, "c-0"); !errors.As(err, &se) || se.Code != 404 {
		t.Fatalf("unknown customer: %v", err)
	}
}

// TestNewClient: bad base URLs and an empty token are refused at
// construction; the token never appears in an error.
func TestNewClient(t *testing.T) {
	for _, u := range []string{"", "tickets.local", "ftp://x", "http://"} {
		if _, err := tickets.NewClient(u, token, nil); err == nil {
			t.Errorf("NewClient(%q) accepted", u)
		} else if strings.Contains(err.Error(), token) {
			t.Errorf("error names the token: %v", err)
		}
	}
	if _, err := tickets.NewClient("http://x", "", nil); err == nil {
		t.Error("an empty token was accepted")
	}
	if _, err := tickets.NewServer("", tickets.Data{}); err == nil {
		t.Error("a server without a token was accepted")
	}
	// A transport error names the request, not the token.
	c := newClient(t, "http://127.0.0.1:1", token)
	if _, err := c.Ticket(context.Background(), "T-1"); err == nil || strings.Contains(err.Error(), token) {
		t.Fatalf("transport error %v", err)
	}
}

// TestAppliedUnder: the service counts what a key applied — once, however
// often it is sent — until its idempotency is broken on purpose.
func TestAppliedUnder(t *testing.T) {
	s, hs := newService(t)
	c := newClient(t, hs.URL, token)
	ctx := context.Background()
	u := tickets.Update{Status: tickets.StatusPending, Reply: "We are looking into it."}
	count := func(key string) int {
		t.Helper()
		a, err := c.AppliedUnder(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return len(a)
	}
	if n := count("op_1"); n != 0 {
		t.Fatalf("%d applied before any update", n)
	}
	for range 2 {
		if _, err := c.Update(ctx, "T-1001", "op_1", u); err != nil {
			t.Fatal(err)
		}
	}
	if n := count("op_1"); n != 1 {
		t.Fatalf("op_1 applied %d times, want 1", n)
	}
	s.BreakIdempotency()
	if _, err := c.Update(ctx, "T-1001", "op_1", u); err != nil {
		t.Fatal(err)
	}
	if n := count("op_1"); n != 2 {
		t.Fatalf("broken: op_1 applied %d times, want 2", n)
	}
}
