package states

import "time"

// Clock is the executor's source of time. Waits, retry backoff, task
// timeouts and heartbeats all go through it, so tests inject a fake clock
// instead of sleeping.
type Clock interface {
	Now() time.Time
	// NewTimer returns a channel that receives once d has elapsed and a
	// function that stops the timer.
	NewTimer(d time.Duration) (<-chan time.Time, func() bool)
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewTimer wraps time.NewTimer.
func (SystemClock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}
