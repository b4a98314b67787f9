package emailcheck

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Pacing of the queries sent to one nameserver.
const (
	// minRTO is the lowest retransmission timeout: below it, the jitter
	// of a busy host's scheduler would pass for lost answers.
	minRTO = 50 * time.Millisecond
	// initialRTO is the retransmission timeout before the first measured
	// round trip, or QueryTimeout when that is shorter: well above the
	// round trip to a resolver (a few milliseconds to a hundred), so that
	// it is seldom spurious, and well below the second RFC 6298 §2.1
	// takes for any path, as a query lost in the first burst costs it.
	initialRTO = 400 * time.Millisecond
	// initialWindow is how many queries a nameserver is sent at once
	// before any answer came back: a burst that a modest resolver's
	// receive buffer holds. Each answer lets one more go, so the window
	// doubles every round trip until answers go missing.
	initialWindow = 64
	// limitedSlowStart is the window past which it grows by at most half
	// as much every round trip, rather than doubling (RFC 3742's
	// max_ssthresh).
	limitedSlowStart = 100
	// minWindow is the least a window shrinks to.
	minWindow = 2
	// rttBand is how much slower than the fastest a nameserver may be and
	// still take first attempts in turn with it (Unbound's RTT band).
	rttBand = 400 * time.Millisecond
)

// nameserver is one nameserver's UDP transport and what the resolver has
// learnt of it: the round-trip time, from which the retransmission
// timeout (RTO) follows as in TCP (RFC 6298), and a window bounding the
// queries in flight, grown by answers and halved when answers go missing
// (additive increase, multiplicative decrease, as TCP Reno's congestion
// window), so that a burst of lookups never floods it.
type nameserver struct {
	addr   string
	udp    *udpTransport
	maxRTO time.Duration // QueryTimeout
	maxWin float64       // MaxInFlight

	mu       sync.Mutex
	srtt     time.Duration
	rttvar   time.Duration
	sampled  bool          // srtt and rttvar hold a measurement
	rto      time.Duration // current retransmission timeout
	backoff  time.Time     // when rto was last doubled
	cwnd     float64       // the window: queries allowed in flight
	ssthresh float64       // below it the window grows by one per answer
	cut      time.Time     // when the window was last halved
	cuts     uint64        // halvings so far
	undo     [2]float64    // cwnd and ssthresh before the last halving
	inFlight int           // queries holding a place in the window
	waiters  []*waiter     // queries waiting for a place, oldest first
}

// waiter is a query waiting for a place in a window.
type waiter struct {
	ready   chan struct{} // closed when granted
	granted bool
	retry   bool // waits for a retry
}

func newNameserver(addr string, timeout time.Duration, maxInFlight int) *nameserver {
	win := float64(min(initialWindow, maxInFlight))
	return &nameserver{
		addr:     addr,
		udp:      newUDPTransport(addr),
		maxRTO:   timeout,
		maxWin:   float64(maxInFlight),
		rto:      min(initialRTO, timeout),
		cwnd:     win,
		ssthresh: float64(maxInFlight),
	}
}

// limit is the window as a whole number of queries.
func (ns *nameserver) limit() int { return max(1, int(ns.cwnd)) }

// acquire takes a place in the window, waiting in turn while the window
// is full, until ctx ends. A retry goes ahead of the first attempts
// waiting, as its question has waited longer.
func (ns *nameserver) acquire(ctx context.Context, retry bool) error {
	ns.mu.Lock()
	if len(ns.waiters) == 0 && ns.inFlight < ns.limit() {
		ns.inFlight++
		ns.mu.Unlock()
		return nil
	}
	w := &waiter{ready: make(chan struct{}), retry: retry}
	if retry {
		// Behind the retries already waiting.
		i := 0
		for i < len(ns.waiters) && ns.waiters[i].retry {
			i++
		}
		ns.waiters = slices.Insert(ns.waiters, i, w)
	} else {
		ns.waiters = append(ns.waiters, w)
	}
	ns.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		ns.mu.Lock()
		if w.granted {
			ns.releaseLocked()
		} else if i := slices.Index(ns.waiters, w); i >= 0 {
			ns.waiters = slices.Delete(ns.waiters, i, i+1)
		}
		ns.mu.Unlock()
		return ctx.Err()
	}
}

// release gives a place back without telling anything of the server.
func (ns *nameserver) release() {
	ns.mu.Lock()
	ns.releaseLocked()
	ns.mu.Unlock()
}

func (ns *nameserver) releaseLocked() {
	ns.inFlight--
	ns.grantLocked()
}

// grantLocked hands the places the window has free to the oldest waiters.
func (ns *nameserver) grantLocked() {
	for len(ns.waiters) > 0 && ns.inFlight < ns.limit() {
		w := ns.waiters[0]
		ns.waiters[0] = nil
		ns.waiters = ns.waiters[1:]
		w.granted = true
		ns.inFlight++
		close(w.ready)
	}
}

// currentRTO returns the retransmission timeout for a query sent now.
func (ns *nameserver) currentRTO() time.Duration {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.rto
}

// answered records the answer to a query sent at sent, in time, and
// gives its place in the window back. Below the threshold the window
// grows by one place per answer while small, and by at most
// limitedSlowStart/2 places per window's worth of answers once larger
// (limited slow start, RFC 3742): a loss is seen only an RTO after it, and
// doubling meanwhile would flood the server. Past the threshold, it grows
// by one place per window's worth of answers. The answers to queries sent
// before the last halving grow nothing: they were sent under the window
// that proved too large.
func (ns *nameserver) answered(sent time.Time) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	ns.sampleLocked(time.Since(sent))
	switch {
	case sent.Before(ns.cut):
	case ns.cwnd >= ns.ssthresh:
		ns.cwnd += 1 / ns.cwnd
	case ns.cwnd <= limitedSlowStart:
		ns.cwnd++
	default:
		ns.cwnd += limitedSlowStart / (2 * ns.cwnd)
	}
	ns.cwnd = min(ns.cwnd, ns.maxWin)
	ns.releaseLocked()
}

// sampleLocked folds a measured round trip into the smoothed RTT and its
// variation (RFC 6298 §2), and sets the RTO from them: the doubling of
// earlier timeouts ends with a fresh measurement.
func (ns *nameserver) sampleLocked(rtt time.Duration) {
	if !ns.sampled {
		ns.srtt, ns.rttvar, ns.sampled = rtt, rtt/2, true
	} else {
		diff := ns.srtt - rtt
		if diff < 0 {
			diff = -diff
		}
		ns.rttvar = (3*ns.rttvar + diff) / 4
		ns.srtt = (7*ns.srtt + rtt) / 8
	}
	ns.rto = min(max(ns.srtt+4*ns.rttvar, minRTO), ns.maxRTO)
}

// timedOut records that a query sent at sent had no answer within its
// RTO: the RTO doubles (once for the queries sent under the same RTO), and
// the query gives its place in the window back, whether or not its answer
// comes later. A timeout alone does not shrink the window: a name whose
// own servers are dead is never answered, by any server, and says nothing
// of this one's queue. The window halves when the question is answered
// after all, to a later attempt ([nameserver.lost]).
func (ns *nameserver) timedOut(sent time.Time) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if !sent.Before(ns.backoff) {
		ns.rto = min(2*ns.rto, ns.maxRTO)
		ns.backoff = time.Now()
	}
	ns.releaseLocked()
}

// lost records that a query sent at sent, while the window allowed win
// queries, timed out and its question was then answered to a later
// attempt: the server dropped it, so the window halves (once for the
// queries sent under the same window). It returns the halving's number, or
// 0 when this window was halved already.
func (ns *nameserver) lost(sent time.Time, win int) uint64 {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if sent.Before(ns.cut) {
		return 0
	}
	ns.undo = [2]float64{ns.cwnd, ns.ssthresh}
	ns.ssthresh = max(min(ns.cwnd, float64(win))/2, minWindow)
	ns.cwnd = min(ns.cwnd, ns.ssthresh)
	ns.cut = time.Now()
	ns.cuts++
	return ns.cuts
}

// late records the answer to a query that had timed out, taken rtt after
// it was sent. When its timeout halved the window and no other has since,
// the halving is undone: the answer was slow, not lost.
func (ns *nameserver) late(rtt time.Duration, cut uint64) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	ns.sampleLocked(rtt)
	ns.undoLocked(cut)
}

func (ns *nameserver) undoLocked(cut uint64) {
	if cut != 0 && cut == ns.cuts {
		ns.cwnd, ns.ssthresh = ns.undo[0], ns.undo[1]
		ns.grantLocked()
	}
}

// sample records a round trip measured outside the window (a ping).
func (ns *nameserver) sample(rtt time.Duration) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	ns.sampleLocked(rtt)
}

// NameserverStats is what a [Validator] has learnt of one nameserver, for
// an operator's metrics.
type NameserverStats struct {
	// Addr is the nameserver, as "host:port".
	Addr string
	// Window is how many queries may be in flight to it at once: it
	// grows with answers and halves when answers go missing.
	Window int
	// InFlight is how many queries hold a place in the window now, and
	// Waiting how many wait for one.
	InFlight, Waiting int
	// SRTT is the smoothed round-trip time of its answers; 0 before the
	// first.
	SRTT time.Duration
	// RTO is the retransmission timeout: how long a query waits for its
	// answer before it is sent again, to the next nameserver when there
	// are several.
	RTO time.Duration
}

func (ns *nameserver) stats() NameserverStats {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return NameserverStats{
		Addr:     ns.addr,
		Window:   ns.limit(),
		InFlight: ns.inFlight,
		Waiting:  len(ns.waiters),
		SRTT:     ns.srtt,
		RTO:      ns.rto,
	}
}

// ResolverStats returns, per configured nameserver in the configured
// order, its window, the queries in flight and waiting, its smoothed
// round-trip time and its retransmission timeout.
func (v *Validator) ResolverStats() []NameserverStats {
	out := make([]NameserverStats, len(v.resolver.servers))
	for i, ns := range v.resolver.servers {
		out[i] = ns.stats()
	}
	return out
}

// pace returns the RTO and the window for a query sent now.
func (ns *nameserver) pace() (time.Duration, int) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.rto, ns.limit()
}
