// Package ratelimit defines the abuse limits of the service: the [Limit]
// of a token bucket and the [Decision] a [Limiter] takes on it; the
// [Quota] of a fixed window and the [QuotaDecision] a [Counter] takes on
// it; [ClientKey], which groups client addresses by network (IPv4 by
// /24, IPv6 by /64); and [Memory], a limiter and counter for one process.
// It depends on nothing else in the module, so that shared limiters in
// storage backends (PostgreSQL, Redis) can implement them without
// importing the HTTP layer; package ratelimittest is the conformance
// suite they pass.
package ratelimit

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Limit is a token bucket: PerSecond tokens are added every second, up
// to Burst; each request takes one.
type Limit struct {
	// PerSecond is the steady rate; negative means unlimited.
	PerSecond float64
	// Burst is the bucket's size: how many requests may arrive at once.
	Burst int
}

// Unlimited reports whether the limit lets every request through.
func (l Limit) Unlimited() bool { return l.PerSecond < 0 }

// Check returns an error unless l is unlimited or a positive, finite
// rate with a burst of at least 1.
func (l Limit) Check() error {
	if l.Unlimited() {
		return nil
	}
	if l.PerSecond == 0 || l.Burst < 1 || math.IsNaN(l.PerSecond) || math.IsInf(l.PerSecond, 0) {
		return fmt.Errorf("ratelimit: invalid limit %+v", l)
	}
	return nil
}

// Interval returns the time l takes to add one token to a bucket, to the
// microsecond and at least one: the emission interval of the generic cell
// rate algorithm that shared limiters run. l must be limited and pass
// Check.
func (l Limit) Interval() time.Duration {
	return time.Duration(math.Max(1, math.Round(1e6/l.PerSecond))) * time.Microsecond
}

// Decision is a [Limiter]'s answer for one request.
type Decision struct {
	// Allowed reports whether the request may proceed.
	Allowed bool
	// Limit is the bucket's size (the Limit-Limit header).
	Limit int
	// Remaining is how many more requests the bucket would allow now
	// (Limit-Remaining).
	Remaining int
	// Reset is the time until the bucket is full again (Limit-Reset).
	Reset time.Duration
	// RetryAfter is, for a refused request, the time until one request
	// would be allowed (Retry-After).
	RetryAfter time.Duration
}

// Limiter takes one token for key from a bucket shaped by limit.
// It may be called concurrently and must honor ctx. An error means the
// limiter could not decide (its backend is down); the HTTP API then lets
// the request through and logs the error.
type Limiter interface {
	Allow(ctx context.Context, key string, limit Limit) (Decision, error)
}

// Group returns the part of a bucket's or quota's key that says where a
// shared limiter may store it: the text between the key's first "{" and
// the first "}" after it, as in a Redis Cluster hash tag, when not empty;
// otherwise the whole key. A limiter that spreads its buckets over
// servers keeps the keys of one group together, and may place keys of
// different groups apart: the buckets of one [MultiLimiter.AllowAll] call
// must share a group. Name them "prefix:{account}:..." to keep all of an
// account's buckets together; a key without braces is placed by itself.
func Group(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// Request names one bucket for [MultiLimiter.AllowAll].
type Request struct {
	Key   string
	Limit Limit
}

// MultiLimiter is a [Limiter] that decides several buckets at once, all or
// none: for a shared limiter, one round trip for all the limits a request
// is under (its key's and its account's).
type MultiLimiter interface {
	Limiter
	// AllowAll takes one token from every bucket of reqs if each of them
	// has one, and none otherwise. It returns one Decision per request,
	// in order: a refusing bucket's is what Allow would answer; when some
	// bucket refuses, the others' are Allowed, with what they have left,
	// though nothing was taken from them. An unlimited request is allowed
	// and touches nothing. The keys must be distinct, and the limited
	// ones must share a [Group]: a call naming two groups is an error.
	AllowAll(ctx context.Context, reqs []Request) ([]Decision, error)
}

// Partition checks reqs for [MultiLimiter.AllowAll] (valid limits, no
// bucket named twice, one [Group] for the limited buckets) and returns a decision per request, filled in for
// the unlimited ones (allowed) and zero for the others, whose indexes it
// returns in order: the part every implementation shares.
func Partition(reqs []Request) (out []Decision, limited []int, err error) {
	out = make([]Decision, len(reqs))
	seen := make(map[string]bool, len(reqs))
	for i, r := range reqs {
		if err := r.Limit.Check(); err != nil {
			return nil, nil, fmt.Errorf("%w for %q", err, r.Key)
		}
		if r.Limit.Unlimited() {
			out[i] = unlimited(r.Limit)
			continue
		}
		if seen[r.Key] {
			return nil, nil, fmt.Errorf("ratelimit: bucket %q asked twice", r.Key)
		}
		if len(limited) > 0 {
			if first := reqs[limited[0]].Key; Group(r.Key) != Group(first) {
				return nil, nil, fmt.Errorf("ratelimit: buckets %q and %q are in different groups", first, r.Key)
			}
		}
		seen[r.Key] = true
		limited = append(limited, i)
	}
	return out, limited, nil
}

// AllowAll decides reqs with l: in one call, all or none, when l is a
// [MultiLimiter]; otherwise with one Allow per request, in order, stopping
// at the first refusal (the buckets before it keep the token taken, those
// after it are not asked and their decisions are zero).
func AllowAll(ctx context.Context, l Limiter, reqs []Request) ([]Decision, error) {
	if m, ok := l.(MultiLimiter); ok {
		return m.AllowAll(ctx, reqs)
	}
	out := make([]Decision, len(reqs))
	for i, r := range reqs {
		d, err := l.Allow(ctx, r.Key, r.Limit)
		if err != nil {
			return nil, err
		}
		out[i] = d
		if !d.Allowed {
			break
		}
	}
	return out, nil
}

// Memory is a [Limiter] and a [Counter] holding one token bucket and one
// quota counter per key in memory (golang.org/x/time/rate). It limits one
// process only. Keys may be many (client addresses, emails): a bucket
// full again and a counter whose window ended are dropped, at most once a
// minute, so memory follows the keys in use. It is safe for concurrent
// use.
type Memory struct {
	now     func() time.Time
	buckets sync.Map // key → *bucket
	swept   atomic.Int64
	q       quotas
}

type bucket struct {
	mu    sync.Mutex
	lim   *rate.Limiter
	limit Limit
	gone  bool // dropped from buckets by a sweep; mu is held to set it
}

// NewMemory returns an empty limiter. now is its clock; nil
// means time.Now.
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now}
}

var _ MultiLimiter = (*Memory)(nil)

// Allow implements [Limiter].
func (m *Memory) Allow(_ context.Context, key string, limit Limit) (Decision, error) {
	if limit.Unlimited() {
		return unlimited(limit), nil
	}
	if err := limit.Check(); err != nil {
		return Decision{}, err
	}
	now := m.now()
	m.sweep(now)
	b := m.lock(key, limit)
	defer b.mu.Unlock()
	b.shape(now, limit)
	return decide(b.lim.AllowN(now, 1), b.lim.TokensAt(now), limit), nil
}

// AllowAll implements [MultiLimiter]: the buckets are locked in key
// order, checked, and then taken from only if all of them allow.
func (m *Memory) AllowAll(_ context.Context, reqs []Request) ([]Decision, error) {
	out, order, err := Partition(reqs)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(reqs[a].Key, reqs[b].Key) })
	buckets := make([]*bucket, len(reqs))
	now := m.now()
	m.sweep(now)
	for _, i := range order {
		b := m.lock(reqs[i].Key, reqs[i].Limit)
		defer b.mu.Unlock()
		b.shape(now, reqs[i].Limit)
		buckets[i] = b
	}
	all := true
	for _, i := range order {
		if buckets[i].lim.TokensAt(now) < 1 {
			all = false
		}
	}
	for _, i := range order {
		lim := buckets[i].lim
		if all {
			lim.AllowN(now, 1)
		}
		tokens := lim.TokensAt(now)
		out[i] = decide(all || tokens >= 1, tokens, reqs[i].Limit)
	}
	return out, nil
}

// lock returns key's bucket, locked, making it if needed.
func (m *Memory) lock(key string, limit Limit) *bucket {
	for {
		v, ok := m.buckets.Load(key)
		if !ok {
			v, _ = m.buckets.LoadOrStore(key, &bucket{lim: rate.NewLimiter(rate.Limit(limit.PerSecond), limit.Burst), limit: limit})
		}
		b := v.(*bucket)
		b.mu.Lock()
		if !b.gone {
			return b
		}
		b.mu.Unlock()
	}
}

// sweep drops, at most once a minute, the buckets that are full again:
// a new one would decide the same. It holds one bucket's lock at a time.
func (m *Memory) sweep(now time.Time) {
	last := m.swept.Load()
	if now.UnixNano()-last < int64(time.Minute) || !m.swept.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	m.buckets.Range(func(k, v any) bool {
		b := v.(*bucket)
		b.mu.Lock()
		if b.lim.TokensAt(now) >= float64(b.limit.Burst) {
			b.gone = true
			m.buckets.CompareAndDelete(k, v)
		}
		b.mu.Unlock()
		return true
	})
}

// shape gives the bucket limit's shape, should it have changed; b.mu is
// held.
func (b *bucket) shape(now time.Time, limit Limit) {
	if b.limit != limit {
		b.lim.SetLimitAt(now, rate.Limit(limit.PerSecond))
		b.lim.SetBurstAt(now, limit.Burst)
		b.limit = limit
	}
}

func unlimited(limit Limit) Decision {
	return Decision{Allowed: true, Limit: limit.Burst, Remaining: limit.Burst}
}

// decide is the decision on a bucket left with tokens.
func decide(allowed bool, tokens float64, limit Limit) Decision {
	d := Decision{
		Allowed:   allowed,
		Limit:     limit.Burst,
		Remaining: max(0, int(math.Floor(tokens))),
		Reset:     secondsFor(float64(limit.Burst)-tokens, limit.PerSecond),
	}
	if !allowed {
		d.RetryAfter = secondsFor(1-tokens, limit.PerSecond)
	}
	return d
}

// secondsFor returns how long a bucket filling at perSecond takes to gain
// tokens tokens.
func secondsFor(tokens, perSecond float64) time.Duration {
	if tokens <= 0 || perSecond <= 0 {
		return 0
	}
	return time.Duration(tokens / perSecond * float64(time.Second))
}

// Len returns how many buckets and quota counters the limiter holds.
func (m *Memory) Len() int {
	n := 0
	m.buckets.Range(func(any, any) bool { n++; return true })
	m.q.mu.Lock()
	defer m.q.mu.Unlock()
	return n + len(m.q.counts)
}
