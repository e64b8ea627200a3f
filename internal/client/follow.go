package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/api"
)

// Follow streams the run's events after seq after to fn, live, until the
// run is terminal and its log is complete; it returns the end. Events come
// once each and in order: when a stream ends early (a gateway's time
// bound, a dropped connection) Follow reconnects with Last-Event-ID. It
// gives up after maxFailures consecutive failed connections, on an API
// error (e.g. 404), when fn returns an error, or when ctx ends.
func (c *Client) Follow(ctx context.Context, id string, after int64, fn func(api.Event) error) (api.StreamEnd, error) {
	const maxFailures = 5
	cursor := after
	failures := 0
	delay := c.backoff
	for {
		end, done, progressed, retry, err := c.followOnce(ctx, id, cursor, &delay, func(ev api.Event) error {
			cursor = ev.Seq
			return fn(ev)
		})
		if done || err != nil && !retry {
			return end, err
		}
		if progressed {
			failures = 0
		}
		if err != nil {
			failures++
			if failures >= maxFailures {
				return api.StreamEnd{}, err
			}
		}
		if err := sleep(ctx, delay); err != nil {
			return api.StreamEnd{}, err
		}
	}
}

// followOnce reads one stream. done: the end event came. retry: the
// failure is worth reconnecting for. The server's retry hint goes to delay.
func (c *Client) followOnce(ctx context.Context, id string, cursor int64, delay *time.Duration, fn func(api.Event) error) (end api.StreamEnd, done, progressed, retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url(runPath(id, "events"), nil), nil)
	if err != nil {
		return end, false, false, false, fmt.Errorf("client: %w", err)
	}
	c.auth(req)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", strconv.FormatInt(cursor, 10))
	resp, err := c.hc.Do(req)
	if err != nil {
		return end, false, false, ctx.Err() == nil, fmt.Errorf("client: follow %s: %w", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		err := decodeError(resp)
		return end, false, false, resp.StatusCode >= 500, err
	}
	return readStream(ctx, resp.Body, id, cursor, delay, fn)
}

// readStream parses one SSE response body (the part of followOnce that
// reads what the server sent: fuzzed by FuzzReadStream). Events at or
// before cursor are skipped; fn sees each later one once, in order.
func readStream(ctx context.Context, body io.Reader, id string, cursor int64, delay *time.Duration, fn func(api.Event) error) (end api.StreamEnd, done, progressed, retry bool, err error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 2<<20) // an event's data is at most 256 KiB before JSON escaping
	var event, data string
	var hasData bool
	for sc.Scan() {
		line := sc.Text()
		if line == "" { // dispatch
			if hasData {
				switch event {
				case "end":
					if err := json.Unmarshal([]byte(data), &end); err != nil {
						return end, false, progressed, false, fmt.Errorf("client: follow %s: end event: %w", id, err)
					}
					return end, true, progressed, false, nil
				case "error":
					var e api.Error
					_ = json.Unmarshal([]byte(data), &e)
					e.Status = http.StatusInternalServerError
					return end, false, progressed, true, &e
				default:
					var ev api.Event
					if err := json.Unmarshal([]byte(data), &ev); err != nil {
						return end, false, progressed, false, fmt.Errorf("client: follow %s: event: %w", id, err)
					}
					if ev.Seq > cursor { // never twice, even if a server repeats itself
						cursor = ev.Seq
						progressed = true
						if err := fn(ev); err != nil {
							return end, false, progressed, false, err
						}
					}
				}
			}
			event, data, hasData = "", "", false
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue // comment: keepalive
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			event = value
		case "data":
			if hasData {
				data += "\n"
			}
			data += value
			hasData = true
		case "retry":
			if ms, err := strconv.Atoi(value); err == nil && ms > 0 {
				*delay = min(time.Duration(ms)*time.Millisecond, 10*time.Second)
			}
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return end, false, progressed, true, fmt.Errorf("client: follow %s: %w", id, err)
	}
	if ctx.Err() != nil {
		return end, false, progressed, false, ctx.Err()
	}
	// The server closed the stream before the end: reconnect.
	return end, false, progressed, true, nil
}
