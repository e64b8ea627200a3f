package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/keelrun/keel/internal/api"
)

// MaxEventsBytes bounds the events of one run_events answer, as JSON.
// The answer carries them twice (structured content, and the same as
// text), so a page stays near 2 MiB and well under 4 MiB, the largest
// answer the deployed API can return (a Lambda behind API Gateway), and
// an MCP client's many concurrent pages cannot grow a server's memory by
// a run's whole log each: a run whose events are large is read in more
// pages, never in one larger answer.
const MaxEventsBytes = 1 << 20

// eventsChunk is how many events run_events reads from the API at a
// time, so that a page of large events is not first read whole.
const eventsChunk = 50

// PageEvents is run_events' answer: an API event page of at most
// MaxEvents events and MaxEventsBytes of them. Cut reports that the page
// stopped early for its size; next_after then continues it.
type PageEvents struct {
	api.EventPage
	Cut bool `json:"cut,omitempty"`
}

// pager gathers events into a page of at most max bytes of them.
type pager struct {
	out       PageEvents
	size, max int
}

// add appends e if it fits and reports whether the page can take more.
// The first event is always taken; if it alone is over max, its data is
// replaced by a note of its size (the whole event is in the API's GET
// /v1/runs/{id}/events).
func (p *pager) add(e api.Event) bool {
	b, err := json.Marshal(e)
	if err == nil && p.size+len(b) <= p.max {
		p.out.Events = append(p.out.Events, e)
		p.out.NextAfter, p.size = e.Seq, p.size+len(b)
		return true
	}
	p.out.Cut = true
	if len(p.out.Events) > 0 {
		return false
	}
	e.Data, _ = json.Marshal(map[string]any{"omitted": fmt.Sprintf(
		"this event is %d bytes, over run_events' bound of %d; GET /v1/runs/{id}/events?after=%d&limit=1 has it whole", len(b), p.max, e.Seq-1)})
	p.out.Events = append(p.out.Events, e)
	p.out.NextAfter, p.size = e.Seq, p.max
	return false
}

// eventPage reads runID's log after after, in chunks, into one bounded
// page.
func eventPage(ctx context.Context, k Keel, runID string, after int64) (PageEvents, error) {
	pg := pager{max: MaxEventsBytes}
	pg.out.NextAfter = after
	for {
		want := min(eventsChunk, MaxEvents-len(pg.out.Events))
		p, err := k.Events(ctx, runID, pg.out.NextAfter, want)
		if err != nil {
			return PageEvents{}, err
		}
		pg.out.Status = p.Status
		for _, e := range p.Events {
			if !pg.add(e) {
				return pg.out, nil // Done stays false: the next page says
			}
		}
		if p.Done || len(p.Events) < want || len(pg.out.Events) >= MaxEvents {
			pg.out.Done = p.Done
			return pg.out, nil
		}
	}
}
