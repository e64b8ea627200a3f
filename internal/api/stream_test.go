package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// sseFrame is one parsed Server-Sent Events frame, or a comment.
type sseFrame struct {
	id, event, data, comment string
}

// openStream starts an SSE request and returns a function that reads the
// next frame (ok=false at the end of the stream).
func openStream(t *testing.T, e *env, path, lastID string) (next func() (sseFrame, bool), resp *http.Response) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return func() (sseFrame, bool) {
		var f sseFrame
		seen := false
		for sc.Scan() {
			ln := sc.Text()
			if ln == "" {
				if seen {
					return f, true
				}
				continue
			}
			seen = true
			switch {
			case strings.HasPrefix(ln, ":"):
				f.comment = strings.TrimSpace(ln[1:])
			case strings.HasPrefix(ln, "id: "):
				f.id = ln[4:]
			case strings.HasPrefix(ln, "event: "):
				f.event = ln[7:]
			case strings.HasPrefix(ln, "data: "):
				f.data = ln[6:]
			}
		}
		return f, false
	}, resp
}

// nextEvent skips retry hints and keepalives.
func nextEvent(t *testing.T, next func() (sseFrame, bool)) sseFrame {
	t.Helper()
	for {
		f, ok := next()
		if !ok {
			t.Fatal("the stream ended early")
		}
		if f.event != "" {
			return f
		}
	}
}

func TestStreamLive(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	r := e.newRun("alice", run.InputQueue)
	next, resp := openStream(t, e, "/v1/runs/"+r.ID+"/events", "")
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, ct)
	}
	f := nextEvent(t, next)
	if f.id != "1" || f.event != string(run.EventRunCreated) {
		t.Fatalf("first frame %+v", f)
	}
	// While nothing happens, the stream sends keepalive comments.
	for {
		f, ok := next()
		if !ok {
			t.Fatal("the stream ended while the run is active")
		}
		if f.comment == "keepalive" {
			break
		}
	}
	// New events arrive live, in order, with their data.
	if _, err := e.store.AppendEvents(ctx, r.ID, []run.Event{
		{Type: run.EventToolStarted, Data: json.RawMessage(`{"tool":"collect"}`)},
		{Type: run.EventToolProgress, Data: json.RawMessage(`{"tool":"collect","done":40,"total":100}`)},
	}); err != nil {
		t.Fatal(err)
	}
	for want := int64(2); want <= 3; want++ {
		f := nextEvent(t, next)
		var ev api.Event
		if err := json.Unmarshal([]byte(f.data), &ev); err != nil {
			t.Fatal(err)
		}
		if f.id != strconv.FormatInt(want, 10) || ev.Seq != want || string(ev.Type) != f.event {
			t.Fatalf("frame %+v, want seq %d", f, want)
		}
		if want == 3 && string(ev.Data) != `{"tool":"collect","done":40,"total":100}` {
			t.Errorf("data %s", ev.Data)
		}
	}
	// The run ends: its last events, then "end", then the stream closes.
	e.commit(r.ID, store.Commit{
		Run:    &store.RunPatch{Status: run.StatusRunning},
		Events: []run.Event{{Type: run.EventTurnStarted}},
	})
	e.commit(r.ID, store.Commit{
		Run:    &store.RunPatch{Status: run.StatusCompleted},
		Events: []run.Event{{Type: run.EventRunCompleted}},
	})
	var types []string
	for {
		f := nextEvent(t, next)
		types = append(types, f.event)
		if f.event == "end" {
			var end api.StreamEnd
			if err := json.Unmarshal([]byte(f.data), &end); err != nil || end.Status != run.StatusCompleted || end.LastSeq != 5 {
				t.Fatalf("end %s (%v)", f.data, err)
			}
			break
		}
	}
	if got := strings.Join(types, ","); got != "turn_started,run_completed,end" {
		t.Errorf("tail %s", got)
	}
	if f, ok := next(); ok {
		t.Errorf("frame after end: %+v", f)
	}
}

func TestStreamResumesFromLastEventID(t *testing.T) {
	e := newEnv(t, nil)
	r := e.newRun("alice", run.InputQueue)
	var evs []run.Event
	for i := range 5 {
		evs = append(evs, run.Event{Type: run.EventToolProgress, Data: json.RawMessage(fmt.Sprintf(`{"done":%d,"total":5}`, i+1))})
	}
	if _, err := e.store.AppendEvents(context.Background(), r.ID, evs); err != nil {
		t.Fatal(err)
	}
	e.setStatus(r.ID, run.StatusFailed)
	// Last-Event-ID wins over ?after=.
	next, _ := openStream(t, e, "/v1/runs/"+r.ID+"/events?after=1", "4")
	var ids []string
	for {
		f := nextEvent(t, next)
		if f.event == "end" {
			break
		}
		ids = append(ids, f.id)
	}
	if got := strings.Join(ids, ","); got != "5,6" {
		t.Errorf("resumed at %s, want 5,6", got)
	}
}

func TestStreamMaxDuration(t *testing.T) {
	e := newEnv(t, nil)
	r := e.newRun("alice", run.InputQueue)
	h, err := api.New(api.Deps{Store: e.store, Starter: e.starter, Resumer: e.resumer,
		Auth: api.Tokens{aliceToken: "alice"}, Agents: api.AgentSet{}, PollInterval: 1, MaxStreamDuration: 1})
	if err != nil {
		t.Fatal(err)
	}
	e.srv.Config.Handler = h
	next, _ := openStream(t, e, "/v1/runs/"+r.ID+"/events", "")
	var frames []sseFrame
	for {
		f, ok := next()
		if !ok {
			break
		}
		frames = append(frames, f)
	}
	// The stream ends without "end" (the run is active); the client
	// reconnects with Last-Event-ID.
	for _, f := range frames {
		if f.event == "end" {
			t.Fatalf("end on an active run: %+v", frames)
		}
	}
}

// TestStreamEndNamesTheLog: a Last-Event-ID beyond the log is not echoed
// back as the end's last_seq (issue #18).
func TestStreamEndNamesTheLog(t *testing.T) {
	e := newEnv(t, nil)
	r := e.newRun("alice", run.InputQueue)
	e.setStatus(r.ID, run.StatusFailed)
	stored, err := e.store.GetRun(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	next, _ := openStream(t, e, "/v1/runs/"+r.ID+"/events", "999999999999999")
	f := nextEvent(t, next)
	var end api.StreamEnd
	if err := json.Unmarshal([]byte(f.data), &end); err != nil || f.event != "end" {
		t.Fatalf("frame %+v: %v", f, err)
	}
	if end.LastSeq != stored.LastSeq {
		t.Errorf("end last_seq %d, want the log's %d", end.LastSeq, stored.LastSeq)
	}
}
