package jobs

import (
	"sync"
	"time"
)

// Defaults of the DNS-outage handling ([PoolConfig.OutageRetry]).
const (
	// DefaultOutageRetry is how long a job whose validation could not
	// reach any nameserver keeps going back to the queue before it
	// completes as UNKNOWN.
	DefaultOutageRetry = 10 * time.Minute
	// DefaultOutagePause is the longest pause of a pool that found the
	// DNS down; pauses start at a second and double.
	DefaultOutagePause = 30 * time.Second
	// outageThreshold is how many unreachable outcomes in a row open the
	// breaker.
	outageThreshold = 5
)

// breaker notices that DNS as a whole is down from the validations'
// outcomes: after outageThreshold unreachable outcomes in a row it opens,
// and the pool stops leasing until it half-opens for one probe job; an
// answered validation closes it. Pauses double up to a maximum.
type breaker struct {
	max time.Duration

	mu      sync.Mutex
	fails   int
	pause   time.Duration
	until   time.Time // paused until; zero when closed
	probing bool      // half-open: one job is out as a probe
}

// failed records a validation no nameserver answered.
func (b *breaker) failed(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fails++
	b.probing = false
	if b.fails < outageThreshold && b.until.IsZero() {
		return
	}
	switch {
	case b.pause == 0:
		b.pause = time.Second
	default:
		b.pause = min(2*b.pause, b.max)
	}
	b.until = now.Add(b.pause)
}

// answered records a validation a nameserver answered.
func (b *breaker) answered() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fails, b.pause, b.until, b.probing = 0, 0, time.Time{}, false
}

// admit returns how many jobs the pool may lease now, out of want, and
// how long to wait when the answer is none.
func (b *breaker) admit(now time.Time, want int) (int, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.until.IsZero():
		return want, 0
	case now.Before(b.until):
		return 0, b.until.Sub(now)
	case b.probing:
		return 0, time.Second
	}
	b.probing = true
	return 1, 0
}

// open reports whether the pool is pausing for a DNS outage.
func (b *breaker) open() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.until.IsZero()
}
