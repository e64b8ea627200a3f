package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// Transport defaults; see TransportOptions.
const (
	DefaultMaxAttempts   = 4
	DefaultBaseBackoff   = time.Second
	DefaultMaxBackoff    = 30 * time.Second
	DefaultIdleTimeout   = 60 * time.Second
	DefaultMaxInlineWait = 20 * time.Second
)

// TransportOptions configure NewTransport. A zero field takes its default.
type TransportOptions struct {
	// Provider names the provider in errors and logs ("anthropic").
	Provider string
	// Model is the configured model name, the fallback key of the price
	// lookup when the response does not name its model.
	Model string
	// Endpoint keys the per-endpoint 429 counter; default "Provider:Model".
	Endpoint string

	// MaxAttempts bounds the tries of one call, the first included
	// (default 4).
	MaxAttempts int
	// BaseBackoff and MaxBackoff bound the exponential backoff between
	// tries: attempt n waits between half and all of
	// min(MaxBackoff, BaseBackoff·2^(n-1)) (defaults 1s, 30s).
	BaseBackoff, MaxBackoff time.Duration
	// IdleTimeout is the longest silence between two chunks (or before the
	// first) before the attempt is cancelled as a stall (default 60s).
	IdleTimeout time.Duration
	// MaxInlineWait is the longest wait the transport sleeps through itself;
	// a longer retry-after (or limiter delay) returns *RateLimitedError so
	// the harness can wait durably instead of holding a Lambda (default 20s).
	MaxInlineWait time.Duration

	// Limiter is the process's shared token-rate limiter; nil: no limit.
	Limiter *TokenLimiter
	// RateLimits are the process's shared 429 counters; nil: a private set.
	RateLimits *RateLimitCounters
	// Prices give Response.CostMicroUSD; a model not in the table costs 0.
	Prices PriceTable
	// EstimateTokens is what a call reserves in the limiter before it is
	// made; default EstimateTokens.
	EstimateTokens func(Request) int64

	// Sleep waits for d or until ctx is done (default: a timer). Tests
	// inject one that records and returns at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a number in [0, 1) (default math/rand/v2).
	Jitter func() float64
	// AfterFunc arms the idle timer (default time.AfterFunc). Tests inject
	// a timer they advance themselves.
	AfterFunc func(d time.Duration, f func()) Timer
	// Logger receives one line per failed attempt (default: discard).
	Logger *slog.Logger
}

// NewTransport wraps one provider into a Model that keeps the transport
// transport rules (the package comment states them):
//
//   - every call is streamed through an Accumulator; a stream that ends or
//     breaks before its final chunk, or whose tool call arguments are not a
//     complete JSON object, is a failed attempt and nothing of it is returned;
//   - a failed attempt is retried whole, up to MaxAttempts, with exponential
//     backoff and jitter; a 429 waits its retry-after instead;
//   - no chunk within IdleTimeout cancels the attempt (a stall), retried;
//   - 5xx, connection failures, cuts, stalls and malformed events are
//     retried; any other status is returned at once as a *CallError
//     wrapping the provider's *StatusError;
//   - a wait longer than MaxInlineWait, or 429s until the attempts run out,
//     return *RateLimitedError: the harness turns it into a durable wait;
//   - every call reserves its estimated tokens in the shared limiter before
//     it starts and settles them from the usage after.
//
// Every failed attempt is listed, in order, in Response.Attempts of a
// success or in the Attempts of the returned error, for the event log.
func NewTransport(s Streamer, opts TransportOptions) Model {
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.BaseBackoff <= 0 {
		opts.BaseBackoff = DefaultBaseBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.MaxInlineWait <= 0 {
		opts.MaxInlineWait = DefaultMaxInlineWait
	}
	if opts.Endpoint == "" {
		opts.Endpoint = opts.Provider + ":" + opts.Model
	}
	if opts.RateLimits == nil {
		opts.RateLimits = NewRateLimitCounters()
	}
	if opts.EstimateTokens == nil {
		opts.EstimateTokens = EstimateTokens
	}
	if opts.Sleep == nil {
		opts.Sleep = sleep
	}
	if opts.Jitter == nil {
		opts.Jitter = rand.Float64
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.AfterFunc == nil {
		opts.AfterFunc = func(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
	}
	return &transport{s: s, o: opts}
}

// Timer is the part of *time.Timer the idle timeout uses.
type Timer interface {
	Reset(d time.Duration) bool
	Stop() bool
}

type transport struct {
	s Streamer
	o TransportOptions
}

var _ Model = (*transport)(nil)

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// EstimateTokens guesses a call's tokens before it is made: about four
// characters per input token, plus the output limit.
func EstimateTokens(req Request) int64 {
	n := len(req.System)
	for _, m := range req.Messages {
		n += len(m.Text)
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Args)
		}
		for _, r := range m.ToolResults {
			n += len(r.Content)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	out := req.MaxTokens
	if out <= 0 {
		out = DefaultMaxTokens
	}
	return int64(n/4) + int64(out)
}

// limiterTokens is what a call spent against a tokens-per-minute limit:
// every input token, cached or not, and every output token.
func limiterTokens(u Usage) int64 {
	return u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens + u.OutputTokens
}

func (t *transport) Generate(ctx context.Context, req Request) (Response, error) {
	var attempts []Attempt
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return Response{}, &CallError{Provider: t.o.Provider, Attempts: attempts, Err: err}
		}
		est := t.o.EstimateTokens(req)
		res := t.o.Limiter.Reserve(est)
		if res.Delay > t.o.MaxInlineWait {
			res.Cancel()
			return Response{}, &RateLimitedError{RetryAfter: res.Delay, Attempts: attempts, Endpoint: t.o.Endpoint, Limiter: true}
		}
		if res.Delay > 0 {
			if err := t.o.Sleep(ctx, res.Delay); err != nil {
				res.Cancel()
				return Response{}, &CallError{Provider: t.o.Provider, Attempts: attempts, Err: err}
			}
		}

		resp, f := t.attempt(ctx, req)
		if f == nil {
			res.Settle(limiterTokens(resp.Usage))
			if p, ok := t.o.Prices.Lookup(resp.Model, t.o.Model); ok {
				resp.CostMicroUSD = p.Cost(resp.Usage)
			}
			resp.Attempts = attempts
			return resp, nil
		}
		// A failed attempt keeps its reservation: the provider may well have
		// counted its input against our limit.
		res.Settle(est)
		if ctx.Err() != nil {
			// The caller gave up; that is not the provider's failure.
			return Response{}, &CallError{Provider: t.o.Provider, Attempts: attempts, Err: ctx.Err()}
		}
		a := f.attempt
		a.Endpoint = t.o.Endpoint
		attempts = append(attempts, a)
		t.o.Logger.LogAttrs(ctx, slog.LevelWarn, "model attempt failed",
			slog.String("provider", t.o.Provider), slog.String("endpoint", t.o.Endpoint),
			slog.String("run_id", req.RunID), slog.Int("attempt", n),
			slog.String("kind", a.Kind), slog.Int("status", a.Status), slog.String("error", a.Error))
		if a.Kind == AttemptClientError {
			return Response{}, &CallError{Provider: t.o.Provider, Attempts: attempts, Err: f.err}
		}

		wait := t.backoff(n)
		if a.Kind == AttemptRateLimited {
			t.o.RateLimits.Add(req.RunID, t.o.Endpoint)
			if a.RetryAfter > 0 {
				wait = a.RetryAfter
			}
			if wait > t.o.MaxInlineWait || n >= t.o.MaxAttempts {
				return Response{}, &RateLimitedError{RetryAfter: wait, Attempts: attempts, Endpoint: t.o.Endpoint}
			}
		} else if a.RetryAfter > 0 {
			// A 503 may carry retry-after too; never retry sooner than asked.
			wait = max(wait, a.RetryAfter)
		}
		if n >= t.o.MaxAttempts {
			return Response{}, &CallError{Provider: t.o.Provider, Attempts: attempts, Err: f.err}
		}
		if err := t.o.Sleep(ctx, wait); err != nil {
			return Response{}, &CallError{Provider: t.o.Provider, Attempts: attempts, Err: err}
		}
	}
}

// backoff before attempt n+1: equal jitter over an exponential step, so
// concurrent callers spread out but none retries immediately.
func (t *transport) backoff(n int) time.Duration {
	d := t.o.MaxBackoff
	if n-1 < 30 {
		d = min(t.o.MaxBackoff, t.o.BaseBackoff<<(n-1))
	}
	half := d / 2
	return half + time.Duration(t.o.Jitter()*float64(d-half))
}

// failure is one failed attempt and its error.
type failure struct {
	attempt Attempt
	err     error
}

var errStalled = errors.New("model stream stalled")

// attempt runs one streamed try. The attempt's context is cancelled when
// no chunk arrives within the idle timeout; the provider's stream then
// fails, and the failure is classified as a stall.
func (t *transport) attempt(ctx context.Context, req Request) (Response, *failure) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var stalled atomic.Bool
	idle := t.o.AfterFunc(t.o.IdleTimeout, func() {
		stalled.Store(true)
		cancel(errStalled)
	})
	defer idle.Stop()

	fail := func(err error, started bool) (Response, *failure) {
		if stalled.Load() {
			return Response{}, &failure{
				attempt: Attempt{Kind: AttemptStall, Error: fmt.Sprintf("no chunk for %s", t.o.IdleTimeout)},
				err:     fmt.Errorf("%w: no chunk for %s", errStalled, t.o.IdleTimeout),
			}
		}
		return Response{}, t.classify(err, started)
	}

	s, err := t.s.Stream(actx, req)
	if err != nil {
		return fail(err, false)
	}
	defer s.Close()
	var acc Accumulator
	for {
		c, err := s.Next()
		if errors.Is(err, io.EOF) {
			resp, err := acc.Response()
			if err != nil {
				return fail(err, true)
			}
			return resp, nil
		}
		if err != nil {
			return fail(err, true)
		}
		idle.Reset(t.o.IdleTimeout)
		if err := acc.Add(c); err != nil {
			return fail(err, true)
		}
	}
}

// classify names a failed attempt and says, through its kind, whether it
// is retried. started is true once the provider accepted the request.
func (t *transport) classify(err error, started bool) *failure {
	f := &failure{err: err, attempt: Attempt{Error: err.Error()}}
	var se *StatusError
	switch {
	case errors.As(err, &se):
		f.attempt.Status = se.Status
		f.attempt.RetryAfter = se.RetryAfter
		switch {
		case se.Status == 429:
			f.attempt.Kind = AttemptRateLimited
		case se.Status >= 500:
			f.attempt.Kind = AttemptServerError
		default:
			f.attempt.Kind = AttemptClientError
		}
	case errors.Is(err, ErrMalformed):
		f.attempt.Kind = AttemptMalformed
	case errors.Is(err, ErrIncomplete):
		f.attempt.Kind = AttemptStreamCut
	case started && IsConnectionError(err):
		// The connection broke after the answer began: the stream was cut.
		f.attempt.Kind = AttemptStreamCut
	case IsConnectionError(err):
		f.attempt.Kind = AttemptConnection
	default:
		f.attempt.Kind = AttemptClientError
	}
	return f
}

// IsConnectionError is true for failures of the connection itself, where
// the request may never have reached the provider or its answer was lost.
func IsConnectionError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE)
}
