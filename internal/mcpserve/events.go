package mcpserve

import (
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

// PageEvents is run_events' answer: an API event page cut to
// MaxEventsBytes. Cut reports that the page stopped early for its size;
// next_after then continues it.
type PageEvents struct {
	api.EventPage
	Cut bool `json:"cut,omitempty"`
}

// boundPage keeps p's events while their JSON fits in max bytes. The
// first event is always kept; if it alone is over max, its data is
// replaced by a note of its size (the whole event is in the API's own
// GET /v1/runs/{id}/events). The page is then not done.
func boundPage(p api.EventPage, max int) PageEvents {
	out := PageEvents{EventPage: p}
	size := 0
	for i, e := range p.Events {
		b, err := json.Marshal(e)
		n := len(b)
		if err != nil || size+n > max {
			if i > 0 {
				out.Events = p.Events[:i]
				out.NextAfter, out.Done, out.Cut = p.Events[i-1].Seq, false, true
				return out
			}
			note, _ := json.Marshal(map[string]any{"omitted": fmt.Sprintf(
				"this event's data is %d bytes, over run_events' bound of %d; GET /v1/runs/{id}/events?after=%d&limit=1 has it whole", len(e.Data), max, e.Seq-1)})
			e.Data = note
			out.Events = []api.Event{e}
			out.NextAfter, out.Done, out.Cut = e.Seq, false, true
			if len(p.Events) == 1 {
				out.Done = p.Done
			}
			return out
		}
		size += n
	}
	return out
}
