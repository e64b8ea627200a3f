package client

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/api"
)

// FuzzReadStream feeds the SSE parser arbitrary server output. It must not
// panic, must hand fn each event once in increasing seq after the cursor,
// and must keep the retry delay within its bound.
//
//	go test ./internal/client -run '^$' -fuzz FuzzReadStream -fuzztime 30s
func FuzzReadStream(f *testing.F) {
	f.Add("retry: 1000\n\nid: 1\nevent: run_created\ndata: {\"seq\":1,\"type\":\"run_created\",\"time\":\"2026-01-01T00:00:00Z\"}\n\nevent: end\ndata: {\"status\":\"completed\",\"last_seq\":1}\n\n", int64(0))
	f.Add(": keepalive\n\nid: 2\ndata: {\"seq\":2,\n", int64(1))
	f.Add("data: {\"seq\":3}\ndata: \n\ndata: {\"seq\":3}\n\ndata: {\"seq\":2}\n\n", int64(0))
	f.Add("event: error\ndata: {\"code\":\"internal\"}\n\n", int64(0))
	f.Add("retry: 99999999999999999999\nretry: -5\nevent: end\ndata: [\n\n", int64(0))
	f.Add("event:end\r\ndata:{}\r\n\r\n", int64(7))
	f.Fuzz(func(t *testing.T, body string, cursor int64) {
		delay := time.Second
		last := cursor
		_, _, _, _, _ = readStream(context.Background(), strings.NewReader(body), "run_x", cursor, &delay, func(ev api.Event) error {
			if ev.Seq <= last {
				t.Fatalf("event seq %d after %d", ev.Seq, last)
			}
			last = ev.Seq
			return nil
		})
		if delay <= 0 || delay > 10*time.Second {
			t.Fatalf("retry delay %v", delay)
		}
	})
}
