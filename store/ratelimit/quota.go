package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Quota is a fixed-window quota: at most Limit units in each Window. The
// windows are aligned to the Unix epoch of the counter's clock (for a
// shared counter, its server's), so every instance of a deployment counts
// in the same windows, and a refused taker knows exactly when the quota
// renews: at the end of the window. At a window's boundary a caller may
// use a window's units late in one and the next window's early in the
// next: up to twice Limit in a short span, never more than Limit in one
// window.
type Quota struct {
	// Limit is how many units a window holds; negative means unlimited.
	Limit int
	// Window is the length of a window: at least a millisecond.
	Window time.Duration
}

// Unlimited reports whether the quota lets everything through.
func (q Quota) Unlimited() bool { return q.Limit < 0 }

// ErrInvalidQuota reports a [Quota] or a take that cannot be counted: a
// window shorter than a millisecond, or a negative number of units.
var ErrInvalidQuota = errors.New("ratelimit: invalid quota")

// Check returns an error wrapping [ErrInvalidQuota] unless q is unlimited
// or has a window of at least a millisecond.
func (q Quota) Check() error {
	if q.Unlimited() {
		return nil
	}
	if q.Window < time.Millisecond {
		return fmt.Errorf("%w: %+v", ErrInvalidQuota, q)
	}
	return nil
}

// CheckTake returns an error wrapping [ErrInvalidQuota] unless q passes
// Check and n is not negative: the checks every [Counter] makes before
// taking n units.
func CheckTake(n int, q Quota) error {
	if n < 0 {
		return fmt.Errorf("%w: %d units", ErrInvalidQuota, n)
	}
	return q.Check()
}

// WindowOf returns the number of the window of length w holding the
// instant now µs after the Unix epoch, and the time left until it ends:
// the arithmetic every [Counter] shares.
func WindowOf(nowMicros int64, w time.Duration) (window int64, left time.Duration) {
	size := w.Microseconds()
	window = nowMicros / size
	return window, time.Duration((window+1)*size-nowMicros) * time.Microsecond
}

// QuotaDecision is a [Counter]'s answer to a take.
type QuotaDecision struct {
	// Allowed reports whether the units were taken.
	Allowed bool
	// Limit is the quota's Limit.
	Limit int
	// Remaining is how many units the window has left, after the take.
	Remaining int
	// Reset is the time until the window ends and the quota is whole
	// again; a refused take may be tried again then.
	Reset time.Duration
	// Window numbers the window the decision is about, for
	// [Counter.Refund].
	Window int64
}

// Counter keeps quotas: a counter per key and window, checked and taken
// in one atomic step, so that callers on every instance sharing the
// counter's store never take more than a window's Limit between them.
// It may be called concurrently and must honor ctx; an error means it
// could not decide.
type Counter interface {
	// Take takes n units from key's current window of q if it has n
	// left, and nothing otherwise: all or none. Taking 0 units reads the
	// window without changing it. An unlimited quota is allowed and
	// touches nothing; n larger than q.Limit is never allowed.
	Take(ctx context.Context, key string, n int, q Quota) (QuotaDecision, error)
	// Refund gives back n units taken from window (a QuotaDecision's
	// Window) of key, when the work they paid for did not happen. A
	// window that has ended is left alone, as is a count that would go
	// below zero.
	Refund(ctx context.Context, key string, n int, q Quota, window int64) error
}

// quotaCounter is one key's count in [Memory].
type quotaCounter struct {
	window int64
	ends   int64 // µs since the epoch
	used   int
}

// quotas is the part of [Memory] that keeps quotas.
type quotas struct {
	mu     sync.Mutex
	counts map[string]quotaCounter
	swept  int64 // µs since the epoch of the last sweep
}

var _ Counter = (*Memory)(nil)

// Take implements [Counter]: the window is decided by the limiter's
// clock, under one lock.
func (m *Memory) Take(_ context.Context, key string, n int, q Quota) (QuotaDecision, error) {
	if err := CheckTake(n, q); err != nil {
		return QuotaDecision{}, err
	}
	if q.Unlimited() {
		return QuotaDecision{Allowed: true, Limit: q.Limit}, nil
	}
	now := m.now().UnixMicro()
	window, left := WindowOf(now, q.Window)
	m.q.mu.Lock()
	defer m.q.mu.Unlock()
	m.q.sweep(now)
	c, ok := m.q.counts[key]
	if !ok || c.window != window {
		c = quotaCounter{window: window, ends: now + left.Microseconds()}
	}
	d := QuotaDecision{Limit: q.Limit, Reset: left, Window: window}
	if c.used+n > q.Limit {
		d.Remaining = max(0, q.Limit-c.used)
		return d, nil
	}
	d.Allowed = true
	if n > 0 {
		c.used += n
		if m.q.counts == nil {
			m.q.counts = map[string]quotaCounter{}
		}
		m.q.counts[key] = c
	}
	d.Remaining = q.Limit - c.used
	return d, nil
}

// Refund implements [Counter].
func (m *Memory) Refund(_ context.Context, key string, n int, q Quota, window int64) error {
	if err := CheckTake(n, q); err != nil {
		return err
	}
	if q.Unlimited() || n == 0 {
		return nil
	}
	m.q.mu.Lock()
	defer m.q.mu.Unlock()
	if c, ok := m.q.counts[key]; ok && c.window == window {
		c.used = max(0, c.used-n)
		m.q.counts[key] = c
	}
	return nil
}

// sweep drops, at most once a minute, the counters whose window has
// ended. q.mu is held.
func (q *quotas) sweep(now int64) {
	if now-q.swept < int64(time.Minute/time.Microsecond) {
		return
	}
	q.swept = now
	for k, c := range q.counts {
		if c.ends <= now {
			delete(q.counts, k)
		}
	}
}
