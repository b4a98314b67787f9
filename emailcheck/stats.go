package emailcheck

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// Stats is a snapshot of a Validator's counters, for an operator's
// metrics. Counters only grow for the Validator's life.
type Stats struct {
	// CacheHits and CacheMisses count domain verdicts found in the cache
	// or not; CacheEvictions counts those dropped to make room.
	CacheHits, CacheMisses, CacheEvictions uint64
	// CacheEntries is how many domains are cached now.
	CacheEntries int
	// LookupsInFlight is how many domain lookups are running now.
	LookupsInFlight int64
	// Queries counts DNS exchanges by outcome: "answer" (NOERROR),
	// "nxdomain", "rcode" (SERVFAIL, REFUSED and the like), "timeout" and
	// "error" (no answer for another reason).
	Queries map[string]uint64
	// QueryLatency is the time of the exchanges that got an answer.
	QueryLatency Histogram
}

// Histogram counts observations in buckets.
type Histogram struct {
	// Bounds are the buckets' upper bounds, in seconds, ascending.
	Bounds []float64
	// Counts holds, per bound, how many observations were at most that
	// bound and above the previous one; one more element counts those
	// above the last bound.
	Counts []uint64
	// Count and Sum are the number and the total (in seconds) of the
	// observations.
	Count uint64
	Sum   float64
}

// queryBounds are the latency buckets of DNS exchanges, in seconds.
var queryBounds = [...]float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5}

// Query outcomes.
var queryOutcomes = [...]string{"answer", "nxdomain", "rcode", "timeout", "error"}

// counters are a Validator's statistics, updated with atomics on the hot
// paths.
type counters struct {
	hits, misses, evictions atomic.Uint64
	inFlight                atomic.Int64
	outcomes                [len(queryOutcomes)]atomic.Uint64
	buckets                 [len(queryBounds) + 1]atomic.Uint64
	latencyNanos            atomic.Uint64
}

// observeQuery records one exchange's outcome.
func (c *counters) observeQuery(resp *dns.Msg, err error, took time.Duration) {
	if c == nil {
		return
	}
	switch {
	case err != nil:
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			c.outcomes[3].Add(1)
		} else {
			c.outcomes[4].Add(1)
		}
		return
	case resp.Rcode == dns.RcodeSuccess:
		c.outcomes[0].Add(1)
	case resp.Rcode == dns.RcodeNameError:
		c.outcomes[1].Add(1)
	default:
		c.outcomes[2].Add(1)
	}
	s := took.Seconds()
	i := 0
	for i < len(queryBounds) && s > queryBounds[i] {
		i++
	}
	c.buckets[i].Add(1)
	c.latencyNanos.Add(uint64(took))
}

// Stats returns a snapshot of the Validator's counters.
func (v *Validator) Stats() Stats {
	c := v.counters
	st := Stats{
		CacheHits:       c.hits.Load(),
		CacheMisses:     c.misses.Load(),
		CacheEvictions:  c.evictions.Load(),
		LookupsInFlight: c.inFlight.Load(),
		Queries:         make(map[string]uint64, len(queryOutcomes)),
		QueryLatency:    Histogram{Bounds: queryBounds[:], Counts: make([]uint64, len(c.buckets))},
	}
	if v.cache != nil {
		st.CacheEntries = v.cache.Len()
	}
	for i, o := range queryOutcomes {
		st.Queries[o] = c.outcomes[i].Load()
	}
	for i := range c.buckets {
		n := c.buckets[i].Load()
		st.QueryLatency.Counts[i] = n
		st.QueryLatency.Count += n
	}
	st.QueryLatency.Sum = time.Duration(c.latencyNanos.Load()).Seconds()
	return st
}
