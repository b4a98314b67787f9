package emailcheck

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miekg/dns"
)

// errNoAnswer is returned when no server gave a usable answer within the
// configured timeouts and retries.
var errNoAnswer = errors.New("emailcheck: dns: no usable answer")

// errUnreachable marks a query no server answered at all (transport
// failures and timeouts on every attempt), as opposed to a server's
// answer of SERVFAIL or REFUSED about the name.
var errUnreachable = errors.New("emailcheck: dns: no nameserver answered")

// maxCNAMEHops bounds how many CNAMEs a lookup follows.
const maxCNAMEHops = 8

// ednsBufferSize is the EDNS0 UDP payload size we advertise (the DNS Flag
// Day 2020 recommendation), which avoids both fragmentation and most
// truncation.
const ednsBufferSize = 1232

// resolver sends queries over the wire with miekg/dns: retransmission
// after each nameserver's measured RTO, retries moving across servers,
// a window of queries in flight per server, UDP sockets kept per server,
// TCP on truncation, EDNS0.
type resolver struct {
	servers  []*nameserver // fixed at construction
	timeout  time.Duration // the longest wait for one answer
	tcp      *dns.Client
	retries  int
	next     atomic.Uint32 // rotates the first server tried
	counters *counters     // nil: nothing is counted
	zones    *zoneMemory   // nil: no zone is remembered
	canary   canary        // the questions proving recursion
	trust    trust         // whether its NXDOMAIN answers are believed
}

func newResolver(servers []string, timeout time.Duration, retries, maxInFlight int) *resolver {
	ns := make([]*nameserver, len(servers))
	for i, s := range servers {
		ns[i] = newNameserver(s, timeout, maxInFlight)
	}
	return &resolver{
		servers: ns,
		timeout: timeout,
		tcp:     &dns.Client{Net: "tcp", Timeout: timeout},
		retries: retries,
	}
}

// rrset is the outcome of one lookup: the rcode of the final answer, the
// records of the asked type owned by the final name of the CNAME chain, and
// the TTLs that govern caching.
type rrset struct {
	rcode   int
	records []dns.RR
	aliased bool     // the name is a CNAME
	ttl     uint32   // minimum TTL of records (positive answers)
	negTTL  uint32   // SOA minimum (negative answers); 0 when absent
	soa     bool     // the answer's authority section holds an SOA
	extra   []dns.RR // A and AAAA records of the additional section
}

// lookup resolves name (a fully qualified, lower-case name) for qtype,
// following CNAMEs the server did not chase. A non-nil error means no
// server gave a definitive answer (timeouts, SERVFAIL, REFUSED, garbage).
func (r *resolver) lookup(ctx context.Context, name string, qtype uint16) (rrset, error) {
	out := rrset{ttl: ^uint32(0)}
	target := name
	for hop := 0; ; hop++ {
		msg, err := r.query(ctx, target, qtype)
		if err != nil {
			return rrset{}, err
		}
		out.rcode = msg.Rcode
		final, records, ttl, sawCNAME := collect(msg, target, qtype)
		if sawCNAME {
			out.aliased = true
		}
		if sawCNAME || len(records) > 0 {
			out.ttl = min(out.ttl, ttl) // nothing outlives a CNAME it came through
		}
		// An answer is final when it holds the records, is negative, or is
		// a NODATA for the end of the chain (RFC 2308 §2.2: an SOA in the
		// authority section says the server followed the chain itself).
		negTTL := soaMinimum(msg)
		if len(records) > 0 || msg.Rcode != dns.RcodeSuccess || final == target || negTTL > 0 {
			out.records = records
			for _, rr := range msg.Extra {
				if t := rr.Header().Rrtype; t == dns.TypeA || t == dns.TypeAAAA {
					out.extra = append(out.extra, rr)
				}
			}
			if out.ttl == ^uint32(0) {
				out.ttl = 0
			}
			out.negTTL = negTTL
			out.soa = hasSOA(msg, target)
			return out, nil
		}
		// The answer ended in a CNAME whose target the server did not
		// resolve: ask for the target ourselves.
		if hop == maxCNAMEHops {
			return rrset{}, fmt.Errorf("%w: CNAME chain longer than %d at %s", errNoAnswer, maxCNAMEHops, name)
		}
		target = final
	}
}

// collect follows the CNAME chain from name within msg's answer section and
// returns the final name, the records of qtype it owns, their minimum TTL,
// and whether any CNAME was followed.
func collect(msg *dns.Msg, name string, qtype uint16) (final string, records []dns.RR, ttl uint32, sawCNAME bool) {
	final = name
	ttl = ^uint32(0)
	for hops := 0; hops <= maxCNAMEHops; hops++ {
		next := ""
		for _, rr := range msg.Answer {
			h := rr.Header()
			if !strings.EqualFold(h.Name, final) {
				continue
			}
			if c, ok := rr.(*dns.CNAME); ok && qtype != dns.TypeCNAME {
				next = strings.ToLower(c.Target)
				ttl = min(ttl, h.Ttl)
			}
		}
		if next == "" || next == final {
			break
		}
		final, sawCNAME = next, true
	}
	for _, rr := range msg.Answer {
		h := rr.Header()
		if h.Rrtype == qtype && strings.EqualFold(h.Name, final) {
			records = append(records, rr)
			ttl = min(ttl, h.Ttl)
		}
	}
	if ttl == ^uint32(0) {
		ttl = 0
	}
	return final, records, ttl, sawCNAME
}

// soaMinimum returns the negative-caching TTL of a response (RFC 2308 §5:
// the lesser of the SOA's TTL and its MINIMUM field), or 0 without an SOA.
func soaMinimum(msg *dns.Msg) uint32 {
	for _, rr := range msg.Ns {
		if soa, ok := rr.(*dns.SOA); ok {
			return min(soa.Hdr.Ttl, soa.Minttl)
		}
	}
	return 0
}

// hasSOA reports whether a response's authority section holds the SOA of
// a zone that name is in (name itself or a parent), as a negative answer
// must (RFC 2308 §3): an SOA of an unrelated zone, as a filtering
// resolver's policy zone, proves nothing of name.
func hasSOA(msg *dns.Msg, name string) bool {
	for _, rr := range msg.Ns {
		if _, ok := rr.(*dns.SOA); ok && dns.IsSubDomain(rr.Header().Name, name) {
			return true
		}
	}
	return false
}

// attempt is one sending of a question to one nameserver.
type attempt struct {
	ns   *nameserver
	call udpCall
	sent time.Time
	rto  time.Duration // the server's RTO when sent
	// mark is the attempt's place in the server's first flight, nil
	// outside it.
	mark    *flightMark
	window  int    // the server's window when sent
	cut     uint64 // the window halving its loss caused, or 0
	holding bool   // holds a place in the server's window
	retry   bool   // a retransmission: its place is of their share
	marked  bool   // sent under a zone marked silent: its timeout is the zone's
	pending bool   // waits for its answer
	expired bool   // its RTO passed without an answer
}

// leaveFlight takes the attempt out of its server's first flight: it was
// answered, timed out or ended.
func (a *attempt) leaveFlight() {
	if a.mark != nil {
		a.mark.done.Store(true)
		a.mark = nil
	}
}

// query sends one question and returns the first NOERROR or NXDOMAIN
// answer. It waits for a place in a nameserver's window, sends, and when
// no answer came within the server's RTO sends again, to the next server
// when several answer about as fast, still taking the earlier attempts'
// answers until each has waited QueryTimeout. SERVFAIL, REFUSED and the
// like are asked of the other servers and reported as errors when none
// does better.
//
// A timeout backs the query's own retransmissions off (each waits at
// least twice its previous attempt's RTO). The first attempt is always
// sent; after a timeout, a question under a zone whose names lately went
// unanswered is not sent again (it waits for its answers until they time
// out), and one under a zone whose question is being retransmitted waits
// for that question's outcome before sending again; under such zones the
// first attempts wait for a place in the window as retransmissions do
// ([zoneMemory]).
func (r *resolver) query(ctx context.Context, name string, qtype uint16) (*dns.Msg, error) {
	q := r.newQueryRun(name, qtype)
	defer q.finish()
	for {
		again, err := q.sendNext(ctx)
		if err != nil {
			return nil, err
		}
		if again {
			continue
		}
		// Once every attempt is sent, the query ends when the last one
		// waiting has waited QueryTimeout.
		var end time.Time
		for _, a := range q.atts {
			if a.pending {
				end = a.sent.Add(r.timeout)
			}
		}
		if end.IsZero() && q.zoneWait == nil && q.pause == nil {
			if q.send && len(q.atts) < q.limit {
				continue
			}
			break
		}
		newest := len(q.atts) - 1
		if len(q.atts) == q.limit && !end.IsZero() {
			q.endTimer.Reset(time.Until(end))
		} else {
			// The newest attempt's RTO, at most QueryTimeout, comes first.
			q.endTimer.Stop()
		}
		select {
		case res := <-q.results:
			if resp, done, err := q.received(ctx, res, newest); done {
				return resp, err
			}
		case <-q.rtoTimer.C:
			q.rtoPassed(newest)
		case <-q.zoneWait:
			// The question leading the zone ended: ask the zone again.
			q.zoneWait = nil
		case <-q.pause:
			// Time to see whether the server listens again.
			q.pause = nil
			q.send, q.failover = true, true
		case <-q.endTimer.C:
			return nil, q.expired(ctx)
		case <-ctx.Done():
			return nil, r.failure(ctx, fmt.Errorf("%w: %s %s: %w", errNoAnswer, name, dns.TypeToString[qtype], ctx.Err()), q.answered)
		}
	}
	if q.lastErr == nil {
		q.lastErr = errNoAnswer
	}
	return nil, r.failure(ctx, q.lastErr, q.answered)
}

// queryRun is the state of one [resolver.query]: its attempts, the timers
// pacing them, its standing in its zone, and what the servers said.
type queryRun struct {
	r     *resolver
	name  string
	qtype uint16
	m     *dns.Msg

	seq     []*nameserver // the servers in the order this query prefers them
	tries   []int         // attempts sent to each of seq
	results chan udpResult
	atts    []*attempt

	rtoTimer, endTimer *time.Timer

	zone     string
	lead     chan struct{}   // closed when this query ends, while it leads its zone
	zoneWait <-chan struct{} // closed when the query leading the zone ends
	silent   bool            // every attempt timed out while the servers answered others
	limit    int             // lowered to the attempts sent once the zone is marked silent

	lastErr        error
	answered       bool          // a server answered, whatever it said
	send, failover bool          // send an attempt; to a server not asked yet
	backoff        time.Duration // the least RTO of the next attempt

	// A server whose port refuses (it restarts, or is not there yet) is
	// an outage, not this name's failure: the query waits for it, trying
	// again after a wait doubling from refusalFirstWait, for
	// refusalPatience times QueryTimeout, and the refused attempts use
	// none of its attempts up.
	pauseTimer   *time.Timer
	pause        <-chan time.Time // while waiting after a refusal
	refusals     int
	refusalWait  time.Duration
	firstRefusal time.Time
}

func (r *resolver) newQueryRun(name string, qtype uint16) *queryRun {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.RecursionDesired = true
	m.SetEdns0(ednsBufferSize, false)
	seq := r.rotation()
	maxAttempts := 1 + r.retries
	return &queryRun{
		r:          r,
		name:       name,
		qtype:      qtype,
		m:          m,
		seq:        seq,
		tries:      make([]int, len(seq)),
		results:    make(chan udpResult, maxAttempts+maxRefusals), // room for every attempt's one result
		atts:       make([]*attempt, 0, maxAttempts),
		rtoTimer:   time.NewTimer(time.Hour),
		endTimer:   time.NewTimer(time.Hour),
		pauseTimer: time.NewTimer(time.Hour),
		zone:       r.zones.key(name, qtype),
		limit:      maxAttempts,
		send:       true,
	}
}

// finish ends the query: it stops its timers, hands its zone on, and
// settles its attempts.
func (q *queryRun) finish() {
	q.pauseTimer.Stop()
	if q.zone != "" && (q.lead != nil || q.silent) {
		q.r.zones.end(q.zone, q.lead, q.silent)
	}
	q.endTimer.Stop()
	q.rtoTimer.Stop()
	for _, a := range q.atts {
		q.r.settle(a)
	}
}

// refused tells whether a failed send or read to ns is a refusal the
// query waits out, and if so arms the wait.
func (q *queryRun) refused(ns *nameserver, err error) bool {
	if !isRefusal(err) || q.refusals == maxRefusals {
		return false
	}
	// A server refusing for longer than the patience is down, not
	// restarting: the query fails at once, as the canary tells.
	if !ns.refusing(refusalPatience * q.r.timeout) {
		return false
	}
	if q.refusals == 0 {
		q.firstRefusal = time.Now()
	} else if time.Since(q.firstRefusal) >= refusalPatience*q.r.timeout {
		return false
	}
	q.refusals++
	q.limit++
	q.refusalWait = min(max(2*q.refusalWait, refusalFirstWait), refusalMaxWait)
	q.pauseTimer.Reset(q.refusalWait)
	q.pause, q.send = q.pauseTimer.C, false
	return true
}

// sendNext sends the next attempt when one is due and its zone lets it:
// while another question under the zone leads it, the query waits for its
// outcome before sending; once the zone is marked silent, it sends its
// first attempt (and failovers after a failure) but nothing after a
// timeout. again says the query should look at what is due once more
// before waiting.
func (q *queryRun) sendNext(ctx context.Context) (again bool, err error) {
	r := q.r
	resend := len(q.atts) > 0 && !q.failover // after a timeout
	if q.send && q.zoneWait == nil && len(q.atts) < q.limit && q.lead == nil {
		w, marked := r.zones.gate(q.zone)
		if marked && resend {
			q.limit, q.send = len(q.atts), false
		}
		q.zoneWait = w
	}
	if !q.send || q.zoneWait != nil || len(q.atts) >= q.limit {
		return false, nil
	}
	q.send = false
	i, probe := pickProbe(q.seq, q.tries, q.failover)
	ns := q.seq[i]
	// A first attempt under a marked zone waits as a retry does.
	marked := r.zones.marked(q.zone)
	retry := len(q.atts) > 0 || marked
	// While it waits for a place, a server that stops answering (its RTO
	// doubles) may have fallen out of those pick prefers: pick again.
	dismissed, err := ns.acquireOrLeave(ctx, retry, len(q.seq) > 1)
	if err != nil {
		return false, r.failure(ctx, fmt.Errorf("%w: %s %s: waiting for %s: %w", errNoAnswer, q.name, dns.TypeToString[q.qtype], ns.addr, err), q.answered)
	}
	if dismissed {
		q.send = true
		return true, nil
	}
	if !probe && !q.failover && passedOver(q.seq, ns) {
		// It was granted a place at a server gone silent, freed by that
		// server's own queries timing out, while another answers again:
		// it goes there instead, as pick now says.
		ns.release(retry)
		q.send = true
		return true, nil
	}
	if q.lead == nil {
		// The wait for a place may have been long: ask the zone again.
		w, marked := r.zones.gate(q.zone)
		if w != nil || marked && (resend || !retry) {
			ns.release(retry)
			switch {
			case w != nil:
				q.zoneWait, q.send = w, true
			case resend:
				q.limit = len(q.atts)
			default:
				q.send = true // again, as a retry does
			}
			return true, nil
		}
	}
	q.tries[i]++
	a := &attempt{ns: ns, holding: true, retry: retry, marked: marked, sent: time.Now()}
	a.rto, a.window, a.mark = ns.pace(a.sent, retry)
	a.rto = min(max(a.rto, q.backoff), r.timeout)
	q.atts = append(q.atts, a)
	call, err := ns.udp.send(q.m, len(q.atts)-1, q.results)
	if err != nil {
		a.holding = false
		a.leaveFlight()
		ns.release(retry)
		r.counters.observeQuery(nil, err, 0)
		q.lastErr = fmt.Errorf("%w: %s: %w", errNoAnswer, ns.addr, err)
		if !q.refused(ns, err) {
			q.send, q.failover = true, true
		}
		return true, nil
	}
	a.call, a.pending = call, true
	q.rtoTimer.Reset(a.rto)
	return false, nil
}

// received handles the result of an attempt, newest being the index of
// the latest: done says the query ends with resp and err.
func (q *queryRun) received(ctx context.Context, res udpResult, newest int) (resp *dns.Msg, done bool, err error) {
	r := q.r
	a := q.atts[res.tag]
	a.pending = false
	if res.err != nil {
		// The socket failed (the port is unreachable): the server is not
		// there to answer.
		a.leaveFlight()
		if a.holding {
			a.holding = false
			a.ns.release(a.retry)
		}
		r.counters.observeQuery(nil, res.err, 0)
		q.lastErr = fmt.Errorf("%w: %s: %w", errNoAnswer, a.ns.addr, res.err)
		if res.tag == newest && !q.refused(a.ns, res.err) {
			q.send, q.failover = true, true
		}
		return nil, false, nil
	}
	rtt := time.Since(a.sent)
	a.ns.heard()
	a.leaveFlight()
	if a.holding {
		a.holding = false
		a.ns.answered(a.sent, a.retry)
	} else {
		a.ns.late(rtt, a.cut)
	}
	resp, err = r.answer(ctx, q.m, a.ns, res.wire)
	r.counters.observeQuery(resp, err, rtt)
	if err != nil {
		q.lastErr = err
		if res.tag == newest {
			q.send, q.failover = true, true
		}
		return nil, false, nil
	}
	q.answered = true
	r.zones.answered(q.zone)
	q.lead = nil // answered ends the lead too
	// The question was answerable: the earlier attempts that timed out
	// unanswered were dropped.
	for _, b := range q.atts[:res.tag] {
		if b.expired && b.pending && b.cut == 0 {
			b.cut = b.ns.lost(b.sent, b.window)
		}
	}
	switch resp.Rcode {
	case dns.RcodeSuccess, dns.RcodeNameError:
		return resp, true, nil
	}
	q.lastErr = fmt.Errorf("%w: %s from %s for %s %s", errNoAnswer,
		dns.RcodeToString[resp.Rcode], a.ns.addr, q.name, dns.TypeToString[q.qtype])
	if len(r.servers) == 1 {
		// Asking the same server again rarely changes its mind; timeouts
		// are retried, failures answered are not.
		return nil, true, q.lastErr
	}
	if res.tag == newest {
		q.send, q.failover = true, true
	}
	return nil, false, nil
}

// rtoPassed handles the end of the newest attempt's RTO: unless its
// answer is in or it is still in the server's queue, it timed out, and the
// next attempt is due.
func (q *queryRun) rtoPassed(newest int) {
	if newest < 0 {
		return
	}
	a := q.atts[newest]
	if !a.pending || a.expired {
		return
	}
	// An answer already received, or a query still in the server's
	// queue: waiting costs less than a retransmission would.
	if wait := a.rto / 2; !a.marked && (len(q.results) > 0 || a.ns.queued(a.sent)) && time.Since(a.sent)+wait < q.r.timeout {
		q.rtoTimer.Reset(wait)
		return
	}
	a.expired = true
	a.holding = false
	a.leaveFlight()
	if a.marked {
		// Expected of the zone: no sign of the server's.
		a.ns.release(a.retry)
	} else {
		a.ns.timedOut(a.sent, a.retry)
	}
	q.backoff = 2 * a.rto
	if q.lead == nil && len(q.atts) < q.limit {
		q.lead = q.r.zones.suspect(q.zone)
	}
	q.send, q.failover = true, false
}

// expired ends a query every attempt of which has waited QueryTimeout,
// and returns its error.
func (q *queryRun) expired(ctx context.Context) error {
	for _, a := range q.atts {
		a.expired = a.expired || a.pending
	}
	// The zone is silent when the servers answered a question sent after
	// this one's first attempt, and no attempt of it failed otherwise.
	if !q.answered && q.lastErr == nil && len(q.atts) > 0 {
		for _, ns := range q.r.servers {
			q.silent = q.silent || ns.answeredAfter(q.atts[0].sent)
		}
	}
	q.lastErr = fmt.Errorf("%w: %s %s: %w", errNoAnswer, q.name, dns.TypeToString[q.qtype], errUDPTimeout)
	return q.r.failure(ctx, q.lastErr, q.answered)
}

// Waiting for a server whose port refuses: at most maxRefusals attempts
// refused in one query, over refusalPatience times QueryTimeout (4 s by
// default: a resolver's restart, not an outage, which the canary tells),
// the waits between them doubling from refusalFirstWait to
// refusalMaxWait.
const (
	refusalPatience  = 2
	maxRefusals      = 32
	refusalFirstWait = 20 * time.Millisecond
	refusalMaxWait   = 500 * time.Millisecond
)

// isRefusal reports whether a send or a socket's read failed because the
// nameserver's address refused it or could not be reached (ICMP port or
// host unreachable): the server is down or restarting, not slow.
func isRefusal(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

// failure is the error of a query that got no usable answer: it matches
// errUnreachable when no server answered at all, including when the
// lookup's own time ran out first (waiting for a place in a window or for
// an answer: a deadline on ctx), but not when ctx was canceled, which says
// nothing of the servers.
func (r *resolver) failure(ctx context.Context, err error, answered bool) error {
	if !answered && !errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("%w: %w", errUnreachable, err)
	}
	return err
}

// settle ends an attempt when its query ends: it stops waiting, gives its
// place in the window back, and counts it as timed out when it passed its
// RTO unanswered.
func (r *resolver) settle(a *attempt) {
	a.leaveFlight()
	if a.pending {
		a.call.forget()
		if a.expired {
			r.counters.observeQuery(nil, errUDPTimeout, 0)
		}
	}
	if a.holding {
		a.ns.release(a.retry)
	}
}

// answer reads the UDP answer wire to m from ns, asking again over TCP
// when it is truncated, and checks that it answers m's question.
func (r *resolver) answer(ctx context.Context, m *dns.Msg, ns *nameserver, wire []byte) (*dns.Msg, error) {
	resp := new(dns.Msg)
	if err := resp.Unpack(wire); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errNoAnswer, ns.addr, err)
	}
	if resp.Truncated {
		var err error
		if resp, err = exchangeOnce(ctx, r.tcp, m, ns.addr); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", errNoAnswer, ns.addr, err)
		}
	}
	if len(resp.Question) != 1 || !strings.EqualFold(resp.Question[0].Name, m.Question[0].Name) ||
		resp.Question[0].Qtype != m.Question[0].Qtype {
		return nil, fmt.Errorf("%w: %s answered another question", errNoAnswer, ns.addr)
	}
	return resp, nil
}

// rotation returns the servers in the order a query prefers them when
// they answer about as fast: each query starts at the next one.
func (r *resolver) rotation() []*nameserver {
	n := len(r.servers)
	if n == 1 {
		return r.servers
	}
	start := int(r.next.Add(1) % uint32(n))
	return append(r.servers[start:n:n], r.servers[:start]...)
}

// pick returns the index in seq of the server a query's next attempt goes
// to, tries holding how many attempts each has had. After a failure
// (SERVFAIL, REFUSED, no server there) it is the one asked least, first
// in seq. Otherwise, and after a timeout (a lost answer), it is the one
// asked least among those answering about as fast as the fastest (an RTO
// within rttBand of the lowest, as each timeout doubles a server's RTO),
// so that a server that stopped answering is passed over while another
// answers. A server gone silent is passed over while another answers,
// but for one probe each time its RTO passed since it went silent or was
// last probed ([nameserver.probeDueLocked]), which it takes as a server
// that answers would.
func pick(seq []*nameserver, tries []int, failover bool) int {
	i, _ := pickProbe(seq, tries, failover)
	return i
}

// pickProbe is [pick], and reports whether the server picked is silent
// and takes the query as its probe.
func pickProbe(seq []*nameserver, tries []int, failover bool) (int, bool) {
	if len(seq) == 1 {
		return 0, false
	}
	fast := make([]bool, len(seq))
	var rtos []time.Duration
	var silent, probe []bool
	answering := false
	if !failover {
		now := time.Now()
		rtos = make([]time.Duration, len(seq))
		silent, probe = make([]bool, len(seq)), make([]bool, len(seq))
		for i, ns := range seq {
			rtos[i], silent[i], probe[i] = ns.standingAt(now)
			answering = answering || !silent[i]
		}
	}
	for {
		if !failover {
			// A server that went silent is passed over while another
			// answers: its RTO, backed off from a guess, may still be
			// below that of a server measured on a loaded host.
			eligible := func(i int) bool { return !answering || !silent[i] || probe[i] }
			best := time.Duration(math.MaxInt64)
			for i := range seq {
				if eligible(i) {
					best = min(best, rtos[i])
				}
			}
			for i := range seq {
				fast[i] = eligible(i) && rtos[i] <= best+rttBand
			}
		}
		best := 0
		for i := 1; i < len(seq); i++ {
			switch {
			case fast[i] != fast[best]:
				if fast[i] {
					best = i
				}
			case tries[i] < tries[best]:
				best = i
			}
		}
		if failover || !answering || !silent[best] {
			return best, false
		}
		if seq[best].claimProbe(time.Now()) {
			return best, true
		}
		probe[best] = false // another query took the probe
	}
}

// passedOver reports whether ns has gone silent while another server of
// seq answers: [pick] would pass it over, but for a probe.
func passedOver(seq []*nameserver, ns *nameserver) bool {
	if len(seq) == 1 {
		return false
	}
	if _, silent := ns.standing(); !silent {
		return false
	}
	for _, other := range seq {
		if _, silent := other.standing(); other != ns && !silent {
			return true
		}
	}
	return false
}

// close closes the UDP sockets; queries still waiting fail.
func (r *resolver) close() {
	for _, ns := range r.servers {
		ns.udp.close()
	}
}

// exchangeOnce performs one exchange whose connection is closed as soon as
// ctx ends, so a cancelled lookup never waits out the read timeout.
func exchangeOnce(ctx context.Context, c *dns.Client, m *dns.Msg, server string) (*dns.Msg, error) {
	conn, err := c.DialContext(ctx, server)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	resp, _, err := c.ExchangeWithConnContext(ctx, m, conn)
	return resp, err
}

// systemNameservers reads the nameservers of /etc/resolv.conf.
func systemNameservers(path string) ([]string, error) {
	conf, err := dns.ClientConfigFromFile(path)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(conf.Servers))
	for _, s := range conf.Servers {
		out = append(out, net.JoinHostPort(s, conf.Port))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no nameserver in %s", path)
	}
	return out, nil
}

// ErrNameserversDown reports that no configured nameserver answered, or
// that none can resolve; the error [Validator.PingNameservers] returns
// wraps it.
var ErrNameserversDown = errors.New("emailcheck: no nameserver answers")

// errCannotRecurse is the error of a canary whose nameservers answer but
// resolve nothing: a recursive resolver cut off from the rest of the DNS.
var errCannotRecurse = errors.New("emailcheck: dns: the nameservers resolve no name")

// pingAttempts bounds the queries a ping sends one nameserver.
const pingAttempts = 3

// defaultCanaryZones are the zones under which [Validator.PingNameservers]
// asks for random names when [Config.CanaryZones] is empty: top-level
// domains, whose servers a resolver must reach to answer, and which no
// address validated chooses.
var defaultCanaryZones = []string{"com", "net", "org"}

// recursionCheckAge is how long a canary's verdict on recursion stands
// for the lookups that ask it after a SERVFAIL.
const recursionCheckAge = time.Second

// canary holds the zones a canary asks under and its last verdict.
type canary struct {
	zones []string // fully qualified, fixed at construction

	mu        sync.Mutex
	checkedAt time.Time
	checked   error
	// running, while a check of recursion is under way, is closed when it
	// ends: lookups that need a fresh verdict meanwhile wait for it
	// instead of asking again.
	running chan struct{}
}

// PingNameservers tells whether the DNS answers: it asks every configured
// nameserver at once one question whose answer is known (the root's NS
// records) and fails when none answers at all. A recursive resolver
// answers that from its cache even when it can reach nothing upstream, so
// it then asks, of every nameserver at once, for a random name under each
// of the canary zones ([Config.CanaryZones]; by default the top-level
// domains com, net and org), which no address validated chooses: a
// NOERROR or NXDOMAIN proves that the resolver reached the zone's
// servers, and it fails when every such question is answered with
// SERVFAIL or not at all (the resolver is cut off: every lookup would
// fail), forgetting the zones it remembered as unanswered meanwhile. It
// is a readiness check, an outage detector (the jobs pool's canary), or a
// warning at start. A ping takes no place in the nameservers' windows, so
// that lookups waiting there do not delay it; an unanswered ping is sent
// again after the server's RTO, up to three times within QueryTimeout, so
// that one lost datagram is no outage. It does not touch the cache.
func (v *Validator) PingNameservers(ctx context.Context) error {
	r := v.resolver
	root := new(dns.Msg)
	root.SetQuestion(".", dns.TypeNS)
	root.RecursionDesired = true
	if err := r.askAll(ctx, []*dns.Msg{root}, nil); err != nil {
		return fmt.Errorf("%w: %w", ErrNameserversDown, err)
	}
	err := r.recursionWorks(ctx)
	if err != nil {
		r.zones.forget()
		return fmt.Errorf("%w: %w", ErrNameserversDown, err)
	}
	// Nameservers that deny the root or a top-level domain answer, but
	// their NXDOMAINs prove nothing: the lookups would all be UNKNOWN.
	if err := r.trustErr(ctx); err != nil && errors.Is(err, ErrResolverUntrusted) {
		return err
	}
	return nil
}

// recursionWorks asks every nameserver for a random name under each of
// the canary zones, and returns nil at the first NOERROR or NXDOMAIN;
// otherwise an error matching errCannotRecurse. The verdict is kept for
// recursionCheckAge, for [resolver.cutOff].
func (r *resolver) recursionWorks(ctx context.Context) error {
	msgs := make([]*dns.Msg, len(r.canary.zones))
	for i, z := range r.canary.zones {
		m := new(dns.Msg)
		m.SetQuestion(fmt.Sprintf("canary-%016x.%s", rand.Uint64(), z), dns.TypeA)
		m.RecursionDesired = true
		msgs[i] = m
	}
	err := r.askAll(ctx, msgs, recursed)
	if err != nil {
		err = fmt.Errorf("%w: %w", errCannotRecurse, err)
	}
	if ctx.Err() == nil {
		r.canary.mu.Lock()
		r.canary.checkedAt, r.canary.checked = time.Now(), err
		r.canary.mu.Unlock()
	}
	return err
}

// cutOff reports whether the nameservers cannot resolve anything (every
// canary question failed or went unanswered), asking anew when the last
// verdict is older than recursionCheckAge: a SERVFAIL is then the
// resolver's, not the name's.
func (r *resolver) cutOff(ctx context.Context) bool {
	c := &r.canary
	c.mu.Lock()
	if time.Since(c.checkedAt) < recursionCheckAge {
		defer c.mu.Unlock()
		return c.checked != nil
	}
	if running := c.running; running != nil {
		c.mu.Unlock()
		select {
		case <-running:
		case <-ctx.Done():
			return false
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.checked != nil
	}
	running := make(chan struct{})
	c.running = running
	c.mu.Unlock()
	err := r.recursionWorks(ctx)
	c.mu.Lock()
	c.running = nil
	close(running)
	c.mu.Unlock()
	if err != nil && ctx.Err() == nil {
		r.zones.forget()
	}
	return err != nil && ctx.Err() == nil
}

// askAll sends every message to every nameserver at once and returns nil
// at the first answer that counts: any answer when accept is nil, else one
// accept returns nil for.
func (r *resolver) askAll(ctx context.Context, msgs []*dns.Msg, accept func(*nameserver, *dns.Msg) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := len(r.servers) * len(msgs)
	errc := make(chan error, n)
	for _, ns := range r.servers {
		for _, m := range msgs {
			go func() {
				resp, err := r.ping(ctx, ns, m.Copy(), accept == nil)
				if err == nil && accept != nil {
					err = accept(ns, resp)
				}
				errc <- err
			}()
		}
	}
	var errs []error
	for range n {
		err := <-errc
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// recursed accepts an answer that shows the nameserver resolved the name:
// NOERROR or NXDOMAIN.
func recursed(ns *nameserver, resp *dns.Msg) error {
	if resp.Rcode != dns.RcodeSuccess && resp.Rcode != dns.RcodeNameError {
		return fmt.Errorf("%s: %s for %s", ns.addr, dns.RcodeToString[resp.Rcode], resp.Question[0].Name)
	}
	return nil
}

// ping asks ns the question of m, again after each RTO (doubled every
// time), and returns the first answer; its round trip is a sample of the
// server's when sample is set (a question it answers from its cache).
func (r *resolver) ping(ctx context.Context, ns *nameserver, m *dns.Msg, sample bool) (*dns.Msg, error) {
	results := make(chan udpResult, pingAttempts)
	var calls []udpCall
	var sent []time.Time
	defer func() {
		for _, c := range calls {
			c.forget()
		}
	}()
	end := time.NewTimer(r.timeout)
	defer end.Stop()
	wait, _ := ns.standing()
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		select {
		case <-retry.C:
			if len(calls) == pingAttempts {
				continue
			}
			call, err := ns.udp.send(m, len(calls), results)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", ns.addr, err)
			}
			calls = append(calls, call)
			sent = append(sent, time.Now())
			retry.Reset(wait)
			wait *= 2
		case res := <-results:
			if res.err != nil {
				return nil, fmt.Errorf("%s: %w", ns.addr, res.err)
			}
			rtt := time.Since(sent[res.tag])
			resp := new(dns.Msg)
			if err := resp.Unpack(res.wire); err != nil {
				continue // not an answer; one may still come
			}
			ns.heard()
			if sample {
				ns.sample(sent[res.tag], rtt)
			}
			r.counters.observeQuery(resp, nil, rtt)
			return resp, nil
		case <-end.C:
			return nil, fmt.Errorf("%s: %w", ns.addr, errUDPTimeout)
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: %w", ns.addr, ctx.Err())
		}
	}
}
