package emailcheck

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
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

// resolver sends queries over the wire with miekg/dns: per-exchange timeout,
// retries rotating across servers, UDP sockets kept per server, TCP on
// truncation, EDNS0, and a bound on the queries in flight.
type resolver struct {
	servers  []string
	udp      map[string]*udpTransport // by server; fixed at construction
	timeout  time.Duration            // of one exchange
	tcp      *dns.Client
	retries  int
	sem      chan struct{}
	next     atomic.Uint32 // rotates the first server tried
	counters *counters     // nil: nothing is counted
}

func newResolver(servers []string, timeout time.Duration, retries, maxInFlight int) *resolver {
	udp := make(map[string]*udpTransport, len(servers))
	for _, s := range servers {
		udp[s] = newUDPTransport(s)
	}
	return &resolver{
		servers: servers,
		udp:     udp,
		timeout: timeout,
		tcp:     &dns.Client{Net: "tcp", Timeout: timeout},
		retries: retries,
		sem:     make(chan struct{}, maxInFlight),
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

// query sends one question, retrying across servers. It returns the first
// NOERROR or NXDOMAIN answer; SERVFAIL, REFUSED and the like are retried on
// the other servers and reported as errors when none does better.
func (r *resolver) query(ctx context.Context, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.RecursionDesired = true
	m.SetEdns0(ednsBufferSize, false)

	start := r.next.Add(1)
	attempts := 1 + r.retries
	var lastErr error
	answered := false // a server answered, whatever it said
	for i := 0; i < attempts; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		server := r.servers[(start+uint32(i))%uint32(len(r.servers))]
		resp, err := r.exchange(ctx, m, server)
		if err != nil {
			lastErr = err
			continue
		}
		answered = true
		switch resp.Rcode {
		case dns.RcodeSuccess, dns.RcodeNameError:
			return resp, nil
		default:
			lastErr = fmt.Errorf("%w: %s from %s for %s %s", errNoAnswer,
				dns.RcodeToString[resp.Rcode], server, name, dns.TypeToString[qtype])
			if len(r.servers) == 1 {
				// Asking the same server again rarely changes its mind;
				// timeouts are retried, failures answered are not.
				return nil, lastErr
			}
		}
	}
	if lastErr == nil {
		lastErr = errNoAnswer
	}
	if !answered && ctx.Err() == nil {
		return nil, fmt.Errorf("%w: %w", errUnreachable, lastErr)
	}
	return nil, lastErr
}

// exchange sends m to one server over UDP, falling back to TCP when the
// answer is truncated, and checks that the answer is for our question.
func (r *resolver) exchange(ctx context.Context, m *dns.Msg, server string) (*dns.Msg, error) {
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-r.sem }()

	start := time.Now()
	resp, err := r.udp[server].exchange(ctx, m, r.timeout)
	if err == nil && resp.Truncated {
		resp, err = exchangeOnce(ctx, r.tcp, m, server)
	}
	r.counters.observeQuery(resp, err, time.Since(start))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errNoAnswer, server, err)
	}
	if len(resp.Question) != 1 || !strings.EqualFold(resp.Question[0].Name, m.Question[0].Name) ||
		resp.Question[0].Qtype != m.Question[0].Qtype {
		return nil, fmt.Errorf("%w: %s answered another question", errNoAnswer, server)
	}
	return resp, nil
}

// close closes the UDP sockets; queries still waiting fail.
func (r *resolver) close() {
	for _, t := range r.udp {
		t.close()
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

// ErrNameserversDown reports that no configured nameserver answered; the
// error [Validator.PingNameservers] returns wraps it.
var ErrNameserversDown = errors.New("emailcheck: no nameserver answers")

// PingNameservers asks every configured nameserver one question (the
// root's NS records) and returns nil when at least one answers at all,
// whatever its answer: for a readiness check, or a warning at start. It
// does not touch the cache.
func (v *Validator) PingNameservers(ctx context.Context) error {
	m := new(dns.Msg)
	m.SetQuestion(".", dns.TypeNS)
	m.RecursionDesired = true
	var errs []error
	for _, server := range v.resolver.servers {
		if _, err := v.resolver.exchange(ctx, m, server); err == nil {
			return nil
		} else {
			errs = append(errs, err)
		}
	}
	return fmt.Errorf("%w: %w", ErrNameserversDown, errors.Join(errs...))
}
