package model

import (
	"sync"
	"time"
)

// TokenLimiter is a token bucket of tokens per minute (input + output), to
// be shared by every model call of a process so that a fan-out of N
// concurrent calls draws on one budget instead of N. Build one per process
// and give it to every transport (TransportOptions.Limiter).
//
// A reservation is taken before a call from an estimate and settled after
// it from the provider's usage, so the bucket tracks what was really spent.
// The bucket may go negative: a reservation larger than what is left is
// granted with a delay, the time the bucket needs to refill, which keeps
// waiting callers in arrival order.
type TokenLimiter struct {
	mu       sync.Mutex
	capacity float64 // tokens; also the refill per minute
	tokens   float64
	last     time.Time
	now      func() time.Time
}

// NewTokenLimiter returns a full bucket of tokensPerMinute. now is the
// clock (time.Now in production; tests inject their own).
func NewTokenLimiter(tokensPerMinute int64, now func() time.Time) *TokenLimiter {
	if now == nil {
		now = time.Now
	}
	return &TokenLimiter{
		capacity: float64(tokensPerMinute),
		tokens:   float64(tokensPerMinute),
		last:     now(),
		now:      now,
	}
}

// Reservation is tokens taken from a TokenLimiter. Exactly one of Settle
// or Cancel must be called.
type Reservation struct {
	l *TokenLimiter
	n int64
	// Delay is how long the caller must wait before using the tokens.
	Delay time.Duration
}

// Reserve takes n tokens now and says how long to wait before using them.
// A nil limiter grants everything at once.
func (l *TokenLimiter) Reserve(n int64) *Reservation {
	if l == nil {
		return &Reservation{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill()
	l.tokens -= float64(n)
	r := &Reservation{l: l, n: n}
	if l.tokens < 0 {
		perSecond := l.capacity / 60
		r.Delay = time.Duration(-l.tokens / perSecond * float64(time.Second))
	}
	return r
}

// Available is the tokens left in the bucket now (negative while callers
// wait).
func (l *TokenLimiter) Available() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill()
	return int64(l.tokens)
}

func (l *TokenLimiter) refill() {
	now := l.now()
	if elapsed := now.Sub(l.last); elapsed > 0 {
		l.tokens += l.capacity * elapsed.Minutes()
		if l.tokens > l.capacity {
			l.tokens = l.capacity
		}
	}
	l.last = now
}

// Settle replaces the estimate with the tokens really used: the difference
// goes back to the bucket (or is taken from it when the estimate was low).
func (r *Reservation) Settle(actual int64) {
	if r.l == nil {
		return
	}
	r.l.give(float64(r.n - actual))
}

// Cancel returns every reserved token: the call was not made.
func (r *Reservation) Cancel() {
	if r.l == nil {
		return
	}
	r.l.give(float64(r.n))
}

func (l *TokenLimiter) give(n float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill()
	l.tokens += n
	if l.tokens > l.capacity {
		l.tokens = l.capacity
	}
}

// RateLimitCounters counts 429s per run and per endpoint. Share one per
// process, like the limiter. The durable count is the event log's (one
// event per rate_limited attempt); these are the live figures a process
// uses to see pressure across runs. A run's counter is dropped once it has
// seen no 429 for RunIdle, so a long-lived process (keel dev, a warm
// Lambda) holds only the runs under pressure now, not every run it served:
// nothing tells a shared transport that a run ended, so idleness does.
type RateLimitCounters struct {
	// RunIdle is how long a run's counter outlives its last 429
	// (DefaultRunIdle when 0).
	RunIdle time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu         sync.Mutex
	byRun      map[string]runCount
	byEndpoint map[string]int
	swept      time.Time
}

// DefaultRunIdle is how long a run's 429 counter is kept after its last 429.
const DefaultRunIdle = time.Hour

type runCount struct {
	n    int
	last time.Time
}

// NewRateLimitCounters returns empty counters.
func NewRateLimitCounters() *RateLimitCounters {
	return &RateLimitCounters{byRun: map[string]runCount{}, byEndpoint: map[string]int{}}
}

// Add counts one 429 and returns the new counts. It also drops the
// counters of runs idle for longer than RunIdle (at most once per RunIdle/10).
func (c *RateLimitCounters) Add(runID, endpoint string) (run, ep int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	idle := c.RunIdle
	if idle <= 0 {
		idle = DefaultRunIdle
	}
	if now.Sub(c.swept) >= idle/10 {
		for id, rc := range c.byRun {
			if now.Sub(rc.last) > idle {
				delete(c.byRun, id)
			}
		}
		c.swept = now
	}
	rc := c.byRun[runID]
	rc.n++
	rc.last = now
	c.byRun[runID] = rc
	c.byEndpoint[endpoint]++
	return rc.n, c.byEndpoint[endpoint]
}

func (c *RateLimitCounters) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Run is the number of 429s seen for a run (0 once it was dropped as idle).
func (c *RateLimitCounters) Run(runID string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byRun[runID].n
}

// Runs is how many runs have a counter.
func (c *RateLimitCounters) Runs() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byRun)
}

// Endpoint is the number of 429s seen for an endpoint.
func (c *RateLimitCounters) Endpoint(endpoint string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byEndpoint[endpoint]
}
