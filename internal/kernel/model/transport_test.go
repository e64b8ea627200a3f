package model_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/model"
)

// play is one scripted attempt of a fake provider: the error Stream
// returns, or the chunks it yields and how it ends.
type play struct {
	startErr error         // returned by Stream
	chunks   []model.Chunk // yielded in order
	endErr   error         // returned after the chunks instead of io.EOF
	block    bool          // after the chunks, block until ctx is done
}

// fakeStreamer is a provider of our own Streamer interface (not of any
// external API): it replays plays in order, one per call.
type fakeStreamer struct {
	mu       sync.Mutex
	plays    []play
	calls    int
	onStream func() // called as each attempt starts
}

func (f *fakeStreamer) Stream(ctx context.Context, _ model.Request) (model.Stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls >= len(f.plays) {
		return nil, fmt.Errorf("fake: no play for call %d", f.calls+1)
	}
	p := f.plays[f.calls]
	f.calls++
	if f.onStream != nil {
		f.onStream()
	}
	if p.startErr != nil {
		return nil, p.startErr
	}
	return &fakeStream{ctx: ctx, p: p}, nil
}

func (f *fakeStreamer) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

type fakeStream struct {
	ctx context.Context
	p   play
	i   int
}

func (s *fakeStream) Next() (model.Chunk, error) {
	if s.i < len(s.p.chunks) {
		s.i++
		return s.p.chunks[s.i-1], nil
	}
	if s.p.block {
		<-s.ctx.Done()
		return model.Chunk{}, s.ctx.Err()
	}
	if s.p.endErr != nil {
		return model.Chunk{}, s.p.endErr
	}
	return model.Chunk{}, io.EOF
}

func (s *fakeStream) Close() error { return nil }

// recorder is the injected sleeper: it records and returns at once.
type recorder struct {
	mu     sync.Mutex
	sleeps []time.Duration
}

func (r *recorder) Sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sleeps = append(r.sleeps, d)
	return ctx.Err()
}

func (r *recorder) Sleeps() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.sleeps...)
}

func toolCallChunks(args ...string) []model.Chunk {
	cs := []model.Chunk{
		{Kind: model.ChunkStart, ResponseID: "resp_1", Model: "m-1"},
		{Kind: model.ChunkText, Text: "Let me search."},
		{Kind: model.ChunkToolCallStart, Index: 1, ID: "call_1", Name: "web_search"},
	}
	for _, a := range args {
		cs = append(cs, model.Chunk{Kind: model.ChunkToolArgsDelta, Index: 1, Text: a})
	}
	return cs
}

func completeToolCall() []model.Chunk {
	cs := toolCallChunks(`{"query":`, `"durable `, `agents"`, `,"max_results":5}`)
	return append(cs,
		model.Chunk{Kind: model.ChunkToolCallEnd, Index: 1},
		model.Chunk{Kind: model.ChunkUsage, Usage: model.Usage{InputTokens: 1000, OutputTokens: 200, CacheReadTokens: 500}},
		model.Chunk{Kind: model.ChunkStop, StopReason: model.StopToolUse},
	)
}

// cutToolCall is a stream that broke inside the tool call's arguments.
func cutToolCall() []model.Chunk { return toolCallChunks(`{"query":`, `"rm -rf`) }

func status(code int, retryAfter time.Duration) error {
	return &model.StatusError{Provider: "fake", Status: code, RequestID: "req_42", RetryAfter: retryAfter, Message: "boom"}
}

func kinds(as []model.Attempt) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Kind)
	}
	return out
}

func newTransport(f *fakeStreamer, r *recorder, mod func(*model.TransportOptions)) model.Model {
	o := model.TransportOptions{
		Provider:    "fake",
		Model:       "m-1",
		MaxAttempts: 3,
		BaseBackoff: time.Second,
		MaxBackoff:  8 * time.Second,
		IdleTimeout: time.Hour, // the stall test sets its own
		Sleep:       r.Sleep,
		Jitter:      func() float64 { return 0 },
		Prices:      model.PriceTable{"m-1": {Input: 3_000_000, Output: 15_000_000, CacheRead: 300_000}},
	}
	if mod != nil {
		mod(&o)
	}
	return model.NewTransport(f, o)
}

func TestTransportRetries(t *testing.T) {
	tests := []struct {
		name       string
		plays      []play
		opts       func(*model.TransportOptions)
		wantKinds  []string
		wantSleeps []time.Duration
		wantErr    func(*testing.T, error)
	}{
		{
			name:  "success first time",
			plays: []play{{chunks: completeToolCall()}},
		},
		{
			name:       "stream cut mid tool args is retried whole",
			plays:      []play{{chunks: cutToolCall()}, {chunks: completeToolCall()}},
			wantKinds:  []string{model.AttemptStreamCut},
			wantSleeps: []time.Duration{500 * time.Millisecond},
		},
		{
			name:       "connection reset after start is a cut",
			plays:      []play{{chunks: cutToolCall(), endErr: syscall.ECONNRESET}, {chunks: completeToolCall()}},
			wantKinds:  []string{model.AttemptStreamCut},
			wantSleeps: []time.Duration{500 * time.Millisecond},
		},
		{
			name:       "connection refused before start",
			plays:      []play{{startErr: syscall.ECONNREFUSED}, {chunks: completeToolCall()}},
			wantKinds:  []string{model.AttemptConnection},
			wantSleeps: []time.Duration{500 * time.Millisecond},
		},
		{
			name:       "malformed event",
			plays:      []play{{chunks: cutToolCall(), endErr: fmt.Errorf("%w: bad json", model.ErrMalformed)}, {chunks: completeToolCall()}},
			wantKinds:  []string{model.AttemptMalformed},
			wantSleeps: []time.Duration{500 * time.Millisecond},
		},
		{
			name:       "tool args complete but never valid",
			plays:      []play{{chunks: append(toolCallChunks(`{"a":`), model.Chunk{Kind: model.ChunkStop})}, {chunks: completeToolCall()}},
			wantKinds:  []string{model.AttemptStreamCut},
			wantSleeps: []time.Duration{500 * time.Millisecond},
		},
		{
			name:       "500 then 503 with retry-after, exponential backoff",
			plays:      []play{{startErr: status(500, 0)}, {startErr: status(503, 5*time.Second)}, {chunks: completeToolCall()}},
			wantKinds:  []string{model.AttemptServerError, model.AttemptServerError},
			wantSleeps: []time.Duration{500 * time.Millisecond, 5 * time.Second},
		},
		{
			name:       "429 honours retry-after",
			plays:      []play{{startErr: status(429, 7*time.Second)}, {chunks: completeToolCall()}},
			wantKinds:  []string{model.AttemptRateLimited},
			wantSleeps: []time.Duration{7 * time.Second},
		},
		{
			name:      "429 with a long retry-after asks for a durable wait",
			plays:     []play{{startErr: status(429, 90*time.Second)}},
			wantKinds: []string{model.AttemptRateLimited},
			wantErr: func(t *testing.T, err error) {
				var rl *model.RateLimitedError
				if !errors.As(err, &rl) || rl.RetryAfter != 90*time.Second || rl.Limiter || rl.Endpoint != "fake:m-1" {
					t.Fatalf("err = %#v, want RateLimitedError after 90s from fake:m-1", err)
				}
			},
		},
		{
			name:       "429 until attempts run out asks for a durable wait",
			plays:      []play{{startErr: status(429, 0)}, {startErr: status(429, 0)}, {startErr: status(429, 0)}},
			wantKinds:  []string{model.AttemptRateLimited, model.AttemptRateLimited, model.AttemptRateLimited},
			wantSleeps: []time.Duration{500 * time.Millisecond, time.Second},
			wantErr: func(t *testing.T, err error) {
				var rl *model.RateLimitedError
				if !errors.As(err, &rl) || rl.RetryAfter != 2*time.Second {
					t.Fatalf("err = %v, want RateLimitedError after the next backoff (2s)", err)
				}
			},
		},
		{
			name:      "400 is not retried",
			plays:     []play{{startErr: status(400, 0)}, {chunks: completeToolCall()}},
			wantKinds: []string{model.AttemptClientError},
			wantErr: func(t *testing.T, err error) {
				var se *model.StatusError
				if !errors.As(err, &se) || se.Status != 400 {
					t.Fatalf("err = %v, want a StatusError 400", err)
				}
				for _, s := range []string{"fake", "400", "req_42"} {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not name %q", err, s)
					}
				}
			},
		},
		{
			name:       "cut on every attempt fails the call, nothing partial",
			plays:      []play{{chunks: cutToolCall()}, {chunks: cutToolCall()}, {chunks: cutToolCall()}},
			wantKinds:  []string{model.AttemptStreamCut, model.AttemptStreamCut, model.AttemptStreamCut},
			wantSleeps: []time.Duration{500 * time.Millisecond, time.Second},
			wantErr: func(t *testing.T, err error) {
				var ce *model.CallError
				if !errors.As(err, &ce) || !errors.Is(err, model.ErrIncomplete) || len(ce.Attempts) != 3 {
					t.Fatalf("err = %v, want a CallError wrapping ErrIncomplete with 3 attempts", err)
				}
			},
		},
		{
			name:       "backoff is capped and jittered",
			plays:      []play{{startErr: status(500, 0)}, {startErr: status(500, 0)}, {startErr: status(500, 0)}, {startErr: status(500, 0)}, {startErr: status(500, 0)}, {chunks: completeToolCall()}},
			opts:       func(o *model.TransportOptions) { o.MaxAttempts = 6; o.Jitter = func() float64 { return 0.5 } },
			wantKinds:  []string{"server_error", "server_error", "server_error", "server_error", "server_error"},
			wantSleeps: []time.Duration{750 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second, 6 * time.Second, 6 * time.Second},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeStreamer{plays: tc.plays}
			r := &recorder{}
			resp, err := newTransport(f, r, tc.opts).Generate(context.Background(), model.Request{RunID: "run_1"})
			var got []model.Attempt
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("Generate succeeded with %+v, want an error", resp)
				}
				tc.wantErr(t, err)
				if resp.ToolCalls != nil || resp.Text != "" {
					t.Fatalf("a failed call returned content: %+v", resp)
				}
				var ce *model.CallError
				var rl *model.RateLimitedError
				switch {
				case errors.As(err, &ce):
					got = ce.Attempts
				case errors.As(err, &rl):
					got = rl.Attempts
				}
			} else {
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				if len(resp.ToolCalls) != 1 || string(resp.ToolCalls[0].Args) != `{"query":"durable agents","max_results":5}` {
					t.Fatalf("tool calls = %+v, want the complete call only", resp.ToolCalls)
				}
				// 1000·3 + 200·15 + 500·0.3 = 6150 micro-USD.
				if resp.CostMicroUSD != 6150 {
					t.Errorf("cost = %d micro-USD, want 6150", resp.CostMicroUSD)
				}
				got = resp.Attempts
			}
			if fmt.Sprint(kinds(got)) != fmt.Sprint(tc.wantKinds) {
				t.Errorf("attempts = %v, want %v", kinds(got), tc.wantKinds)
			}
			for _, a := range got {
				if a.Endpoint != "fake:m-1" || a.Error == "" {
					t.Errorf("attempt %+v lacks endpoint or error", a)
				}
			}
			if fmt.Sprint(r.Sleeps()) != fmt.Sprint(tc.wantSleeps) {
				t.Errorf("sleeps = %v, want %v", r.Sleeps(), tc.wantSleeps)
			}
		})
	}
}

func TestTransportStall(t *testing.T) {
	// The provider sends part of an answer, then nothing: the idle timeout
	// must cancel the attempt and the call must be retried whole.
	f := &fakeStreamer{plays: []play{
		{chunks: cutToolCall(), block: true},
		{block: true},
		{chunks: completeToolCall()},
	}}
	r := &recorder{}
	m := newTransport(f, r, func(o *model.TransportOptions) { o.IdleTimeout = 20 * time.Millisecond })
	resp, err := m.Generate(context.Background(), model.Request{})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if fmt.Sprint(kinds(resp.Attempts)) != "[stall stall]" {
		t.Fatalf("attempts = %v, want two stalls", kinds(resp.Attempts))
	}
	if string(resp.ToolCalls[0].Args) != `{"query":"durable agents","max_results":5}` {
		t.Fatalf("args = %s", resp.ToolCalls[0].Args)
	}
}

func TestTransportCallerCancelIsNotRetried(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The caller gives up while the first attempt is waiting for chunks.
	f := &fakeStreamer{plays: []play{{block: true}, {chunks: completeToolCall()}}, onStream: cancel}
	_, err := newTransport(f, &recorder{}, nil).Generate(ctx, model.Request{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if f.Calls() != 1 {
		t.Fatalf("provider called %d times, want 1", f.Calls())
	}
}

func TestTransportCountsRateLimits(t *testing.T) {
	counters := model.NewRateLimitCounters()
	f := &fakeStreamer{plays: []play{
		{startErr: status(429, time.Second)}, {chunks: completeToolCall()},
		{startErr: status(429, time.Second)}, {startErr: status(429, time.Second)}, {chunks: completeToolCall()},
	}}
	m := newTransport(f, &recorder{}, func(o *model.TransportOptions) { o.RateLimits = counters })
	for _, run := range []string{"run_a", "run_b"} {
		if _, err := m.Generate(context.Background(), model.Request{RunID: run}); err != nil {
			t.Fatalf("Generate(%s): %v", run, err)
		}
	}
	if a, b, ep := counters.Run("run_a"), counters.Run("run_b"), counters.Endpoint("fake:m-1"); a != 1 || b != 2 || ep != 3 {
		t.Fatalf("counts run_a=%d run_b=%d endpoint=%d, want 1, 2, 3", a, b, ep)
	}
}

// fakeClock is a settable clock for the limiter.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestTransportSharesTokenLimiter(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	lim := model.NewTokenLimiter(6000, clock.Now) // 100 tokens a second
	r := &recorder{}
	// Two transports (two providers, say) on one limiter: each call
	// reserves 1000 + MaxTokens 1000 = 2000 (4000 characters of text).
	req := model.Request{Messages: []model.Message{{Role: model.RoleUser, Text: strings.Repeat("x", 4000)}}, MaxTokens: 1000}
	var ms []model.Model
	for range 2 {
		f := &fakeStreamer{}
		for range 3 {
			f.plays = append(f.plays, play{chunks: []model.Chunk{
				{Kind: model.ChunkText, Text: "ok"},
				{Kind: model.ChunkUsage, Usage: model.Usage{InputTokens: 1000, OutputTokens: 500}},
				{Kind: model.ChunkStop, StopReason: model.StopEndTurn},
			}})
		}
		ms = append(ms, newTransport(f, r, func(o *model.TransportOptions) { o.Limiter = lim; o.MaxInlineWait = time.Minute }))
	}
	// 6000 in the bucket: three calls of 2000 pass; each settles at 1500,
	// giving back 500, so 1500 are left.
	for i := range 3 {
		if _, err := ms[i%2].Generate(context.Background(), req); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if got := lim.Available(); got != 1500 {
		t.Fatalf("available = %d, want 1500", got)
	}
	if len(r.Sleeps()) != 0 {
		t.Fatalf("slept %v before the bucket was empty", r.Sleeps())
	}
	// The fourth needs 2000 with 1500 left: it waits 500 tokens' refill, 5s.
	if _, err := ms[1].Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(r.Sleeps()) != "[5s]" {
		t.Fatalf("sleeps = %v, want [5s]", r.Sleeps())
	}
	// Now at -500+500 = 0 after settling. A call that would wait longer
	// than MaxInlineWait returns a durable wait and takes nothing.
	short := newTransport(&fakeStreamer{}, r, func(o *model.TransportOptions) { o.Limiter = lim; o.MaxInlineWait = 10 * time.Second })
	_, err := short.Generate(context.Background(), req)
	var rl *model.RateLimitedError
	if !errors.As(err, &rl) || !rl.Limiter || rl.RetryAfter != 20*time.Second {
		t.Fatalf("err = %v, want a limiter RateLimitedError after 20s", err)
	}
	if got := lim.Available(); got != 0 {
		t.Fatalf("available = %d after a refused call, want 0", got)
	}
	clock.Advance(30 * time.Second)
	if got := lim.Available(); got != 3000 {
		t.Fatalf("available = %d after 30s, want 3000", got)
	}
}

func TestPriceLookup(t *testing.T) {
	table := model.PriceTable{
		"claude-sonnet-4-5": {Input: 3_000_000, Output: 15_000_000},
		"gpt-4o":            {Input: 2_500_000, Output: 10_000_000},
		"gpt-4o-mini":       {Input: 150_000, Output: 600_000},
	}
	tests := []struct {
		name    string
		names   []string
		want    int64
		wantHit bool
	}{
		{"exact", []string{"gpt-4o"}, 2_500_000, true},
		{"longest contained key wins", []string{"gpt-4o-mini-2024-07-18"}, 150_000, true},
		{"bedrock inference profile", []string{"us.anthropic.claude-sonnet-4-5-20250929-v1:0"}, 3_000_000, true},
		{"falls back to the configured name", []string{"", "claude-sonnet-4-5"}, 3_000_000, true},
		{"unknown", []string{"llama"}, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := table.Lookup(tc.names...)
			if ok != tc.wantHit || p.Input != tc.want {
				t.Fatalf("Lookup(%v) = %+v, %v", tc.names, p, ok)
			}
		})
	}
	// One token at $3/MTok is 3 micro-USD; a third of a micro-USD rounds up.
	if c := (model.Price{Input: 3_000_000}).Cost(model.Usage{InputTokens: 1}); c != 3 {
		t.Errorf("cost = %d, want 3", c)
	}
	if c := (model.Price{Input: 333_333}).Cost(model.Usage{InputTokens: 1}); c != 1 {
		t.Errorf("cost = %d, want 1 (rounded up)", c)
	}
	parsed, err := model.ParsePriceTable([]byte(`{"m":{"input":1,"output":2,"cache_read":3,"cache_write":4}}`))
	if err != nil || parsed["m"] != (model.Price{Input: 1, Output: 2, CacheRead: 3, CacheWrite: 4}) {
		t.Fatalf("ParsePriceTable = %+v, %v", parsed, err)
	}
}

// stepTimer is an idle timer driven by the test: advance moves its clock,
// and it fires once IdleTimeout has passed since it was last reset.
type stepTimer struct {
	mu      sync.Mutex
	d       time.Duration
	elapsed time.Duration
	f       func()
	stopped bool
}

func (s *stepTimer) Reset(d time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d, s.elapsed, s.stopped = d, 0, false
	return true
}

func (s *stepTimer) Stop() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	return true
}

func (s *stepTimer) advance(d time.Duration) {
	s.mu.Lock()
	s.elapsed += d
	fire := !s.stopped && s.elapsed >= s.d
	if fire {
		s.stopped = true
	}
	s.mu.Unlock()
	if fire {
		s.f()
	}
}

// pacedStream waits step on the timer's clock before each chunk.
type pacedStreamer struct {
	chunks []model.Chunk
	timer  func() *stepTimer
	step   time.Duration
}

func (p *pacedStreamer) Stream(ctx context.Context, _ model.Request) (model.Stream, error) {
	return &pacedStream{ctx: ctx, p: p}, nil
}

type pacedStream struct {
	ctx context.Context
	p   *pacedStreamer
	i   int
}

func (s *pacedStream) Next() (model.Chunk, error) {
	s.p.timer().advance(s.p.step)
	if err := s.ctx.Err(); err != nil {
		return model.Chunk{}, err
	}
	if s.i == len(s.p.chunks) {
		return model.Chunk{}, io.EOF
	}
	s.i++
	return s.p.chunks[s.i-1], nil
}

func (s *pacedStream) Close() error { return nil }

// The idle timeout bounds the silence between chunks, not the whole call:
// a long answer whose chunks each come within the timeout is no stall, and
// one gap longer than the timeout is.
func TestTransportIdleTimeoutIsPerChunk(t *testing.T) {
	tests := []struct {
		name      string
		step      time.Duration
		wantStall bool
	}{
		{name: "steady chunks, long call", step: 60 * time.Millisecond},
		{name: "one gap past the timeout", step: 100 * time.Millisecond, wantStall: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var timer *stepTimer
			var mu sync.Mutex
			ps := &pacedStreamer{chunks: completeToolCall(), step: tc.step, timer: func() *stepTimer {
				mu.Lock()
				defer mu.Unlock()
				return timer
			}}
			m := model.NewTransport(ps, model.TransportOptions{
				Provider:    "fake",
				MaxAttempts: 1,
				IdleTimeout: 100 * time.Millisecond,
				AfterFunc: func(d time.Duration, f func()) model.Timer {
					mu.Lock()
					defer mu.Unlock()
					timer = &stepTimer{d: d, f: f}
					return timer
				},
			})
			resp, err := m.Generate(context.Background(), model.Request{})
			var ce *model.CallError
			switch {
			case tc.wantStall && (!errors.As(err, &ce) || ce.Attempts[0].Kind != model.AttemptStall):
				t.Fatalf("err = %v, want a stall", err)
			case !tc.wantStall && err != nil:
				t.Fatalf("a steady stream of %d chunks (%s total) failed: %v", len(ps.chunks), time.Duration(len(ps.chunks))*tc.step, err)
			case !tc.wantStall && len(resp.ToolCalls) != 1:
				t.Fatalf("response = %+v", resp)
			}
		})
	}
}

// BenchmarkTransport measures what the transport adds to a call: the
// accumulator, the idle timer, the limiter and the price lookup.
func BenchmarkTransport(b *testing.B) {
	lim := model.NewTokenLimiter(1<<40, nil)
	plays := make([]play, b.N)
	for i := range plays {
		plays[i] = play{chunks: completeToolCall()}
	}
	m := newTransport(&fakeStreamer{plays: plays}, &recorder{}, func(o *model.TransportOptions) { o.Limiter = lim })
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := m.Generate(context.Background(), model.Request{}); err != nil {
			b.Fatal(err)
		}
	}
}
