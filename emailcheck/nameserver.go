package emailcheck

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
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
	// receive buffer holds.
	initialWindow = 256
	// fastGrowth is how many places each answer adds to the window in the
	// first flight: the window quadruples every round trip, so that a
	// healthy resolver sees a burst of a thousand lookups within two round
	// trips. The first flight ends at the first sign of loss (a hole: a
	// query of it unanswered for two round trips while later ones were
	// answered, or a timeout); then slow start grows the window by one
	// place an answer (doubling every round trip), as TCP's does.
	fastGrowth = 3
	// holeFloor is the least time a first-flight query must wait before
	// its silence counts as a hole: a resolver on the same host answers in
	// well under a millisecond, and a scheduler's jitter is longer.
	holeFloor = minRTO / 2
	// restartBurst is how many queries in flight make a burst once
	// nothing was in flight: such a burst begins a first flight again
	// ([nameserver.takeLocked]). Fewer, a trickle of lookups, send no
	// more than a server of any size takes.
	restartBurst = 32
	// minWindow is the least a window shrinks to.
	minWindow = 2
	// rttBand is how much slower than the fastest a nameserver may be and
	// still take first attempts in turn with it (Unbound's RTT band).
	rttBand = 400 * time.Millisecond
	// retryShare is the share of the window, one part in retryShare, that
	// retransmissions may hold at once: a name that is never answered
	// is retransmitted, and a crowd of them must leave the rest of the
	// window to first attempts.
	retryShare = 4
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

	refusingSince atomic.Int64 // unix ns of the first refusal since its last answer; 0: none

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
	retries  int           // of which retransmissions
	waiters  []*waiter     // first attempts, then retries, oldest first
	// lastAnswer is when the server's latest answer in time came.
	lastAnswer time.Time
	// fast says the first flight goes on: no query has been lost yet, and
	// flight holds its queries in the order sent (those answered or
	// timed out marked done), so that an answer shows the holes before it.
	fast        bool
	flight      []*flightMark
	fastAnswers int // answers in the first flight
	// idle says nothing was in flight since the last burst began: what
	// the window grew to is not known to fit the server now.
	idle bool
	// answeredSent is when the latest-sent query answered so far was
	// sent: a query sent before it and unanswered was passed over by the
	// server for its name's sake, not lost with the server's other work.
	answeredSent time.Time
	// silent says rto doubled since the server's last answer: it may have
	// stopped answering, and a server that answers is preferred to it
	// ([pick]), however their RTOs compare, but for a probe now and then
	// ([nameserver.probeDueLocked]).
	silent bool
	// probed is when a query last went to the server while it was silent,
	// to see whether it answers again.
	probed time.Time
}

// flightMark is a query of a server's first flight; done once it is
// answered, timed out or ended.
type flightMark struct {
	sent time.Time
	done atomic.Bool
}

// waiter is a query waiting for a place in a window.
type waiter struct {
	ready   chan struct{} // closed when granted
	granted bool
	retry   bool // waits for a retry
	// leave says it leaves the queue when the server's RTO doubles, and
	// dismissed that it did: ready was closed without a place.
	leave, dismissed bool
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
		fast:     win < float64(maxInFlight),
	}
}

// refusing records that the server refused a query now, and reports
// whether a query should wait for it: not once it has refused for longer
// than patience without an answer since (it is down, not restarting).
func (ns *nameserver) refusing(patience time.Duration) bool {
	now := time.Now().UnixNano()
	ns.refusingSince.CompareAndSwap(0, now)
	return time.Duration(now-ns.refusingSince.Load()) < patience
}

// heard records an answer from the server: it no longer refuses.
func (ns *nameserver) heard() {
	if ns.refusingSince.Load() != 0 {
		ns.refusingSince.Store(0)
	}
}

// limit is the window as a whole number of queries.
func (ns *nameserver) limit() int { return max(1, int(ns.cwnd)) }

// retryLimit is how many places of the window retransmissions may hold.
func (ns *nameserver) retryLimit() int { return max(1, ns.limit()/retryShare) }

// acquire takes a place in the window, waiting in turn while the window
// is full, until ctx ends. First attempts are served before retries
// (a retry's name has already shown it may never be answered), and
// retries hold at most a quarter of the window, so that names that are
// never answered cannot crowd out the questions asked after them.
func (ns *nameserver) acquire(ctx context.Context, retry bool) error {
	_, err := ns.acquireOrLeave(ctx, retry, false)
	return err
}

// acquireOrLeave is [nameserver.acquire], but when leave is set a
// query still waiting when the server's RTO doubles (it stopped
// answering meanwhile: [nameserver.timedOut]) leaves the queue and
// reports dismissed, so that it can go to a server that answers rather than
// wait its turn behind queries that will all time out.
func (ns *nameserver) acquireOrLeave(ctx context.Context, retry, leave bool) (dismissed bool, err error) {
	ns.mu.Lock()
	if ns.inFlight < ns.limit() && (retry && len(ns.waiters) == 0 && ns.retries < ns.retryLimit() ||
		!retry && (len(ns.waiters) == 0 || ns.waiters[0].retry)) {
		ns.takeLocked(retry)
		ns.mu.Unlock()
		return false, nil
	}
	w := &waiter{ready: make(chan struct{}), retry: retry, leave: leave}
	if retry {
		ns.waiters = append(ns.waiters, w)
	} else {
		// Behind the first attempts already waiting, ahead of the retries.
		i := 0
		for i < len(ns.waiters) && !ns.waiters[i].retry {
			i++
		}
		ns.waiters = slices.Insert(ns.waiters, i, w)
	}
	ns.mu.Unlock()
	select {
	case <-w.ready:
		return w.dismissed, nil
	case <-ctx.Done():
		ns.mu.Lock()
		defer ns.mu.Unlock()
		if w.granted {
			ns.releaseLocked(retry)
		} else if i := slices.Index(ns.waiters, w); i >= 0 {
			ns.waiters = slices.Delete(ns.waiters, i, i+1)
			ns.grantLocked() // a retry behind it may fit now
		}
		return false, ctx.Err()
	}
}

// dismissLocked sends the waiters that may leave away: the server's RTO
// doubled, and they may go to another server.
func (ns *nameserver) dismissLocked() {
	kept := ns.waiters[:0]
	for _, w := range ns.waiters {
		if w.leave {
			w.dismissed = true
			close(w.ready)
			continue
		}
		kept = append(kept, w)
	}
	clear(ns.waiters[len(kept):])
	ns.waiters = kept
}

// takeLocked takes a place in the window. A burst after a time with
// nothing in flight (restartBurst first attempts in flight) begins a
// first flight again, from the window or initialWindow, whichever is
// less: the server may take less than when the window grew (it restarted
// with a smaller receive buffer, or got busy with others' queries), and a
// burst at the whole window would then be mostly dropped and its
// retransmissions with it. Within two round trips a hole shows such a
// loss, and the window falls to twice what the server answered before
// the dropped queries are sent again. This is TCP's restart window after
// idle (RFC 5681 §4.1), with the first flight's growth.
func (ns *nameserver) takeLocked(retry bool) {
	if !retry && ns.inFlight+1 >= restartBurst {
		if ns.idle && !ns.fast && ns.sampled {
			ns.fast, ns.flight, ns.fastAnswers = true, nil, 0
			ns.cwnd = min(ns.cwnd, initialWindow)
		}
		ns.idle = false
	}
	ns.inFlight++
	if retry {
		ns.retries++
	}
}

// release gives a place back without telling anything of the server;
// retry says whether a retransmission held it.
func (ns *nameserver) release(retry bool) {
	ns.mu.Lock()
	ns.releaseLocked(retry)
	ns.mu.Unlock()
}

func (ns *nameserver) releaseLocked(retry bool) {
	ns.inFlight--
	if ns.inFlight == 0 {
		// A first flight whose queries were all answered or ended is
		// over: a later query left unanswered says nothing of it.
		ns.idle = true
		ns.endFlightLocked()
	}
	if retry {
		ns.retries--
	}
	ns.grantLocked()
}

// grantLocked hands the places the window has free to the oldest waiters,
// first attempts before retries, retries within their share.
func (ns *nameserver) grantLocked() {
	for len(ns.waiters) > 0 && ns.inFlight < ns.limit() {
		w := ns.waiters[0]
		if w.retry && ns.retries >= ns.retryLimit() {
			return // the first attempts are all served; retries wait
		}
		ns.waiters[0] = nil
		ns.waiters = ns.waiters[1:]
		w.granted = true
		ns.takeLocked(w.retry)
		close(w.ready)
	}
}

// standing returns the retransmission timeout for a query sent now, and
// whether the server has gone silent: its RTO doubled since its last
// answer.
func (ns *nameserver) standing() (rto time.Duration, silent bool) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.rto, ns.silent
}

// standingAt is [nameserver.standing] for [pick] at now, and whether a
// silent server is due a probe ([nameserver.probeDueLocked]).
func (ns *nameserver) standingAt(now time.Time) (rto time.Duration, silent, probe bool) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.rto, ns.silent, ns.probeDueLocked(now)
}

// probeDueLocked reports whether the server, silent, may be sent one query
// to see whether it answers again: its RTO has passed since the RTO last
// doubled and since the last such probe. A server passed over for its
// silence hears from nobody, and its silence would otherwise outlast
// whatever made it (a lost datagram, a name whose servers are dead, a
// restart) for as long as another server answers, however slowly. A
// probe that times out doubles the RTO again, so that a server that stays
// dead is probed ever more rarely, once per QueryTimeout at most.
func (ns *nameserver) probeDueLocked(now time.Time) bool {
	return ns.silent && !now.Before(later(ns.backoff, ns.probed).Add(ns.rto))
}

// claimProbe takes the probe of a silent server for a query about to be
// sent to it, and reports whether it was still due: queries picking a
// server at once send it one probe between them.
func (ns *nameserver) claimProbe(now time.Time) bool {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if !ns.probeDueLocked(now) {
		return false
	}
	ns.probed = now
	return true
}

// answered records the answer to a query sent at sent, in time, and
// gives its place in the window back. Below the threshold (slow start)
// the window grows by one place per answer, so that it doubles every
// round trip while the server keeps up: a healthy resolver sees a burst
// as fast as it answers, and the first loss halves the window back to
// half of what it was when the lost query was sent ([nameserver.lost]).
// Past the threshold, it grows by one place per window's worth of
// answers. The answers to queries sent before the last halving grow
// nothing: they were sent under the window that proved too large. retry
// says whether a retransmission held the place.
func (ns *nameserver) answered(sent time.Time, retry bool) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	ns.sampleLocked(time.Since(sent))
	ns.answeredSent = later(ns.answeredSent, sent)
	ns.lastAnswer = time.Now()
	switch {
	case sent.Before(ns.cut):
	case ns.fast && !ns.holeLocked(time.Since(sent)):
		ns.fastAnswers++
		ns.cwnd += fastGrowth
		if ns.cwnd >= ns.maxWin {
			ns.endFlightLocked()
		}
	case ns.cwnd < ns.ssthresh:
		ns.cwnd++
	default:
		ns.cwnd += 1 / ns.cwnd
	}
	ns.cwnd = min(ns.cwnd, ns.maxWin)
	ns.releaseLocked(retry)
}

// track files a first attempt sent at sent in the first flight, and
// returns its mark; nil once the first flight is over.
func (ns *nameserver) track(sent time.Time) *flightMark {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.trackLocked(sent)
}

func (ns *nameserver) trackLocked(sent time.Time) *flightMark {
	if !ns.fast {
		return nil
	}
	m := &flightMark{sent: sent}
	ns.flight = append(ns.flight, m)
	return m
}

// holeLocked reports, at an answer that took rtt, whether the first
// flight shows a hole: its oldest query still unanswered has waited two
// smoothed round trips, and twice rtt (the smoothed round trip may be of
// the server as it was before an idle time, faster than now), while
// queries sent after it were answered. A hole ends the first flight, and
// the window falls to twice the answers that came in it: what the server
// has shown it takes in, rather than what was sent into a buffer that
// dropped the rest.
func (ns *nameserver) holeLocked(rtt time.Duration) bool {
	for len(ns.flight) > 0 && ns.flight[0].done.Load() {
		ns.flight[0] = nil
		ns.flight = ns.flight[1:]
	}
	if len(ns.flight) == 0 || time.Since(ns.flight[0].sent) <= max(2*ns.srtt, 2*rtt, holeFloor) {
		return false
	}
	ns.endFlightLocked()
	ns.ssthresh = max(min(ns.cwnd, float64(2*ns.fastAnswers)), minWindow)
	ns.cwnd = min(ns.cwnd, ns.ssthresh)
	return true
}

// endFlightLocked ends the first flight.
func (ns *nameserver) endFlightLocked() {
	ns.fast, ns.flight = false, nil
}

// queued reports, for a query sent at sent whose RTO has just passed,
// whether the server is still working through the queries sent before
// it: it answered some since this one was sent, and none sent noticeably
// later (by more than half the smoothed round trip: answers computed side
// by side overtake each other a little, the more so on a loaded machine). Such a query is
// waiting its turn in a queue, on a loaded server or behind a burst, not
// lost: sending it again would only lengthen the queue.
func (ns *nameserver) queued(sent time.Time) bool {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.lastAnswer.After(sent) && !ns.answeredSent.After(sent.Add(ns.srtt/2))
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
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
	ns.silent = false
}

// timedOut records that a query sent at sent had no answer within its
// RTO, and gives its place in the window back, whether or not its answer
// comes later. It reports whether the server answered a query sent after
// it meanwhile: then the loss is the name's (a recursive resolver still
// waiting on the name's own dead servers) and says nothing of this
// server, so neither its RTO nor its window changes; the query's own
// retransmissions back off; only the window's doubling ends (slow start
// gives way to growth by one place per round trip), since a dropped query
// looks the same until its question is answered to a retransmission, and
// a window doubling meanwhile would flood a server that drops. Otherwise the server may have stopped
// answering altogether, and its RTO doubles (once for the queries sent
// under the same RTO). A timeout never shrinks the window: the window
// halves when the question is answered after all, to a later attempt
// ([nameserver.lost]).
func (ns *nameserver) timedOut(sent time.Time, retry bool) (namesLoss bool) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	namesLoss = ns.answeredSent.After(sent)
	ns.endFlightLocked()
	if namesLoss {
		ns.ssthresh = min(ns.ssthresh, max(ns.cwnd, minWindow))
	}
	if !namesLoss && !sent.Before(ns.backoff) {
		ns.rto = min(2*ns.rto, ns.maxRTO)
		ns.backoff = time.Now()
		ns.silent = true
		ns.dismissLocked()
	}
	ns.releaseLocked(retry)
	return namesLoss
}

// answeredAfter reports whether the server answered a query sent after t.
func (ns *nameserver) answeredAfter(t time.Time) bool {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.answeredSent.After(t)
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
	ns.endFlightLocked()
	ns.undo = [2]float64{ns.cwnd, ns.ssthresh}
	ns.ssthresh = max(min(ns.cwnd, float64(win))/2, minWindow)
	ns.cwnd = min(ns.cwnd, ns.ssthresh)
	ns.cut = time.Now()
	ns.cuts++
	return ns.cuts
}

// late records the answer to a query that had timed out, taken rtt after
// it was sent. Its round trip is a sample of the server's only when no
// query sent after it was answered first (Karn): a slow name's answer,
// overtaken by others, measures the name, not the server. When its
// timeout halved the window and no other has since, the halving is
// undone: the answer was slow, not lost.
func (ns *nameserver) late(rtt time.Duration, cut uint64) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	sent := time.Now().Add(-rtt)
	if !ns.answeredSent.After(sent) {
		ns.sampleLocked(rtt)
		ns.answeredSent = sent
	}
	ns.undoLocked(cut)
}

func (ns *nameserver) undoLocked(cut uint64) {
	if cut != 0 && cut == ns.cuts {
		ns.cwnd, ns.ssthresh = ns.undo[0], ns.undo[1]
		ns.grantLocked()
	}
}

// sample records a round trip measured outside the window (a ping) for
// a query sent at sent.
func (ns *nameserver) sample(sent time.Time, rtt time.Duration) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	ns.sampleLocked(rtt)
	ns.answeredSent = later(ns.answeredSent, sent)
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

// pace returns the RTO and the window for a query sent at sent, and,
// for a first attempt (not a retry) of the first flight, its mark there
// ([nameserver.track]): one lock a query.
func (ns *nameserver) pace(sent time.Time, retry bool) (rto time.Duration, window int, mark *flightMark) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	rto = ns.rto
	if !retry {
		mark = ns.trackLocked(sent)
	}
	if mark != nil {
		// A query of a first flight waits as long as one sent before any
		// round trip was measured: a burst into a buffer that drops most
		// of it shows a hole within two round trips, and the window falls
		// before the dropped queries are sent again, rather than after
		// they were sent into the same full buffer.
		rto = max(rto, min(initialRTO, ns.maxRTO))
	}
	return rto, ns.limit(), mark
}
