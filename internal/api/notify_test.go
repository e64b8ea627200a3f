package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
)

// withDeps replaces e's server by one built from e's store and mod's Deps.
func withDeps(t *testing.T, e *env, mod func(*api.Deps)) {
	t.Helper()
	d := api.Deps{Store: e.store, Starter: e.starter, Resumer: e.resumer, Artifacts: e.arts,
		Auth: api.Tokens{aliceToken: "alice", bobToken: "bob"}, Agents: api.AgentSet{"research": {}}}
	mod(&d)
	h, err := api.New(d)
	if err != nil {
		t.Fatal(err)
	}
	e.srv.Close()
	e.srv = httptest.NewServer(h)
	t.Cleanup(e.srv.Close)
}

// TestStreamNotified (issue #18): a stream reads the store when the
// store's commit says the run's log grew, not on a timer: with an hour
// between polls, the appended event still arrives.
func TestStreamNotified(t *testing.T) {
	e := newEnv(t, nil)
	b := &api.Broadcaster{}
	e.store.OnEvents(b.Notify)
	withDeps(t, e, func(d *api.Deps) { d.Notifier, d.PollInterval = b, time.Hour })
	r := e.newRun("alice", run.InputQueue)
	next, _ := openStream(t, e, "/v1/runs/"+r.ID+"/events", "")
	first := nextEvent(t, next) // what the run had already
	got := make(chan sseFrame, 1)
	go func() {
		for {
			f, ok := next()
			if !ok {
				close(got)
				return
			}
			if f.event != "" {
				got <- f
				return
			}
		}
	}()
	time.Sleep(20 * time.Millisecond) // let the stream reach its wait (no assertion on time)
	if _, err := e.store.AppendEvents(context.Background(), r.ID, []run.Event{{Type: run.EventToolProgress, Data: json.RawMessage(`{"done":1,"total":2}`)}}); err != nil {
		t.Fatal(err)
	}
	select {
	case f, ok := <-got:
		if !ok || f.event != string(run.EventToolProgress) || f.id <= first.id {
			t.Fatalf("after the commit: %+v (first %+v)", f, first)
		}
	case <-time.After(30 * time.Second): // a bound against hanging; the poll would take an hour
		t.Fatal("the appended event never arrived: the stream was not notified")
	}
}

// TestStreamCapPerPrincipal (issue #18): one principal's open streams
// are capped; another principal is not affected; closing one frees a slot.
func TestStreamCapPerPrincipal(t *testing.T) {
	e := newEnv(t, nil)
	withDeps(t, e, func(d *api.Deps) { d.MaxStreamsPerPrincipal = 2 })
	r := e.newRun("alice", run.InputQueue)
	bobs := e.newRun("bob", run.InputQueue)
	open := func(tok string, rr run.Run) (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/v1/runs/"+rr.ID+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); resp.Body.Close() })
		return resp, cancel
	}
	r1, close1 := open(aliceToken, r)
	r2, _ := open(aliceToken, r)
	if r1.StatusCode != 200 || r2.StatusCode != 200 {
		t.Fatalf("first two: %d %d", r1.StatusCode, r2.StatusCode)
	}
	r3, _ := open(aliceToken, r)
	var eb api.ErrorBody
	if err := json.NewDecoder(r3.Body).Decode(&eb); r3.StatusCode != http.StatusTooManyRequests || err != nil || eb.Error.Code != api.CodeTooManyStreams {
		t.Fatalf("third: %d %+v %v", r3.StatusCode, eb.Error, err)
	}
	if rb, _ := open(bobToken, bobs); rb.StatusCode != 200 {
		t.Errorf("bob's stream: %d", rb.StatusCode)
	}
	close1()
	r1.Body.Close()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		r4, c4 := open(aliceToken, r)
		if r4.StatusCode == 200 {
			break
		}
		c4()
		if time.Now().After(deadline) { // a bound against hanging
			t.Fatalf("after closing one: %d", r4.StatusCode)
		}
	}
}
