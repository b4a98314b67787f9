package dnstest

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Options tunes a [Server]. The zero value (or a nil *Options) gives no
// latency, a negative TTL of 60 seconds and no fallback.
type Options struct {
	// Latency is a delay before every answer. [Server.SetLatency]
	// changes it while the server runs.
	Latency time.Duration

	// NegativeTTL is the SOA minimum (and SOA TTL) in NXDOMAIN and
	// NODATA answers, which resolvers use as the negative cache time
	// (RFC 2308); 0 means 60.
	NegativeTTL uint32

	// Fallback, when set, is consulted for names that are not in the
	// zone, before wildcards, so that tests can serve generated zones of
	// thousands of domains without building them. It receives the name
	// in lower case without the trailing dot and reports whether the
	// name exists. It may be called concurrently. A Domain it returns
	// with invalid records is answered SERVFAIL.
	Fallback func(name string) (Domain, bool)

	// NoMXAddrs turns off the default address of MX hosts ([MX]): a host
	// without Addrs and without a zone entry then does not exist.
	NoMXAddrs bool

	// Additional makes MX answers carry the A and AAAA records of their
	// hosts in the additional section, as authoritative servers do for
	// hosts in their zones and some resolvers do from their caches.
	// Default false: like most public resolvers, the server answers the
	// question only, and clients ask for the hosts' addresses themselves.
	Additional bool

	// MaxPending bounds the queries the server holds at once, from their
	// receipt until they are answered (the latency included), as a
	// resolver bounds the queries it works on (Unbound's
	// num-queries-per-thread). A query arriving when that many are held
	// is dropped unanswered, as a busy resolver whose queue is full drops
	// it; [Server.Dropped] counts them. Default 0: no bound.
	MaxPending int

	// ReadBuffer is the size, in bytes, of the UDP socket's receive
	// buffer: the datagrams the kernel holds for the server until it
	// reads them, dropping those that overflow it. Default 4 MiB, or the
	// kernel's maximum when lower.
	ReadBuffer int
}

// maxChase is the number of CNAME hops the server follows in one answer.
const maxChase = 8

// Server is a DNS server on the loopback interface, answering UDP and TCP
// queries on one port from a [Zone] held in memory. It answers as a
// recursive resolver would: with the records of the asked type, following
// CNAMEs, and with NXDOMAIN or NODATA and an SOA record otherwise.
//
// All methods are safe for concurrent use, including while queries are
// being served.
type Server struct {
	addr     string
	negTTL   uint32
	fallback func(string) (Domain, bool)
	latency  atomic.Int64
	lying    atomic.Bool

	noMXAddrs  bool
	additional bool
	maxPending atomic.Int64 // 0: no bound
	pending    atomic.Int64 // queries held now
	dropped    atomic.Int64 // queries dropped for want of room

	mu    sync.RWMutex
	zone  map[string]Domain // canonical name → records
	ents  map[string]int    // canonical name → number of zone names below it
	hosts map[string]MX     // canonical MX host name → how it answers

	countMu sync.Mutex
	counts  map[countKey]int64
	total   atomic.Int64

	udpMu      sync.Mutex // guards udp and udpDown against SetRefusing
	udp, tcp   *dns.Server
	udpDown    bool // SetRefusing closed the UDP socket
	readBuffer int
	done       chan struct{} // closed by Close: wakes delayed answers
	wg         sync.WaitGroup
	closeOnce  sync.Once
	closeErr   error
}

type countKey struct {
	name  string
	qtype uint16
}

// NewServer validates zone, listens on 127.0.0.1 for UDP and TCP on the
// same port (so that clients can retry a truncated answer over TCP) and
// starts serving. The server keeps its own copy of zone. Call
// [Server.Close] to stop it.
func NewServer(zone Zone, opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	s := &Server{
		negTTL:     o.NegativeTTL,
		fallback:   o.Fallback,
		noMXAddrs:  o.NoMXAddrs,
		additional: o.Additional,
		hosts:      make(map[string]MX),
		zone:       make(map[string]Domain, len(zone)),
		ents:       make(map[string]int),
		counts:     make(map[countKey]int64),
		done:       make(chan struct{}),
	}
	if s.negTTL == 0 {
		s.negTTL = 60
	}
	s.latency.Store(int64(o.Latency))
	s.maxPending.Store(int64(max(o.MaxPending, 0)))
	for name, d := range zone {
		cname := canonical(name)
		if err := validate(cname, d); err != nil {
			return nil, err
		}
		s.set(cname, d)
	}

	s.readBuffer = cmp.Or(o.ReadBuffer, 4<<20)
	pc, ln, err := listenPair(s.readBuffer)
	if err != nil {
		return nil, err
	}
	s.addr = pc.LocalAddr().String()
	handler := dns.HandlerFunc(s.serveDNS)
	s.udp = &dns.Server{PacketConn: pc, Handler: handler, UDPSize: dns.MaxMsgSize}
	s.tcp = &dns.Server{Listener: ln, Handler: handler}

	started := make(chan struct{}, 2)
	failed := make(chan error, 2)
	for _, srv := range []*dns.Server{s.udp, s.tcp} {
		srv.NotifyStartedFunc = func() { started <- struct{}{} }
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := srv.ActivateAndServe(); err != nil {
				failed <- err
			}
		}()
	}
	for range 2 {
		select {
		case <-started:
		case err := <-failed:
			close(s.done)
			pc.Close()
			ln.Close()
			_ = s.udp.Shutdown()
			_ = s.tcp.Shutdown()
			s.wg.Wait()
			return nil, fmt.Errorf("dnstest: serve: %w", err)
		}
	}
	return s, nil
}

// listenPair opens a UDP socket and a TCP listener on one loopback port,
// below the usual ephemeral range (32768 and up) when one is free there,
// so that no client socket takes the port while [Server.SetRefusing] has
// the server's UDP socket closed.
func listenPair(readBuffer int) (net.PacketConn, net.Listener, error) {
	var lastErr error
	for try := range 40 {
		addr := "127.0.0.1:0"
		if try < 20 {
			addr = fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000))
		}
		pc, err := net.ListenPacket("udp4", addr)
		if err != nil && try < 20 {
			lastErr = err
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("dnstest: listen udp: %w", err)
		}
		// By default, bursts of thousands of queries must not overflow
		// the socket buffer; the kernel caps this at its configured
		// maximum.
		if u, ok := pc.(*net.UDPConn); ok {
			_ = u.SetReadBuffer(readBuffer)
		}
		ln, err := net.Listen("tcp4", pc.LocalAddr().String())
		if err == nil {
			return pc, ln, nil
		}
		pc.Close()
		lastErr = err
	}
	return nil, nil, fmt.Errorf("dnstest: listen tcp on the udp port: %w", lastErr)
}

// Start is [NewServer] for tests: it fails tb when the server cannot
// start and closes the server when the test ends.
func Start(tb testing.TB, zone Zone, opts *Options) *Server {
	tb.Helper()
	s, err := NewServer(zone, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

// Addr returns the address the server listens on for both UDP and TCP,
// as "127.0.0.1:port".
func (s *Server) Addr() string { return s.addr }

// Close stops both listeners, abandons delayed answers and waits until
// every goroutine of the server has returned. Calling it again does
// nothing and returns the first call's result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.done)
		s.udpMu.Lock()
		var udpErr error
		if !s.udpDown {
			udpErr = s.udp.Shutdown()
		}
		s.udpDown = true
		s.udpMu.Unlock()
		s.closeErr = errors.Join(udpErr, s.tcp.Shutdown())
		s.wg.Wait()
	})
	return s.closeErr
}

// Set adds name to the zone or replaces its records. It panics if d's
// records are invalid (an IPv6 address in A, an unparsable address or
// name), as that is a mistake in the calling test.
func (s *Server) Set(name string, d Domain) {
	cname := canonical(name)
	if err := validate(cname, d); err != nil {
		panic(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set(cname, d)
}

// set stores d under a canonical name; the caller holds s.mu or owns s.
func (s *Server) set(cname string, d Domain) {
	if _, ok := s.zone[cname]; !ok {
		for p := parent(cname); p != ""; p = parent(p) {
			s.ents[p]++
		}
	}
	s.zone[cname] = d
	for _, mx := range d.MX {
		if h := canonical(mx.Host); h != "." {
			s.hosts[h] = mx
		}
	}
}

// hostDomain returns the records an MX host's name answers with when the
// zone has no entry for it, and whether the name is such a host.
func (s *Server) hostDomain(name string) (Domain, lookupKind, bool) {
	s.mu.RLock()
	mx, ok := s.hosts[name]
	s.mu.RUnlock()
	switch {
	case !ok:
		return Domain{}, nameMissing, false
	case mx.Missing:
		return Domain{}, nameMissing, true
	case len(mx.Addrs) == 0 && s.noMXAddrs:
		return Domain{}, nameMissing, true
	case len(mx.Addrs) == 0:
		return Domain{A: []string{DefaultMXAddr}}, nameFound, true
	}
	var d Domain
	for _, a := range mx.Addrs {
		if netip.MustParseAddr(a).Is4() {
			d.A = append(d.A, a)
		} else {
			d.AAAA = append(d.AAAA, a)
		}
	}
	return d, nameFound, true
}

// Delete removes name from the zone; it does nothing if name is absent.
func (s *Server) Delete(name string) {
	cname := canonical(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.zone[cname]; !ok {
		return
	}
	delete(s.zone, cname)
	for p := parent(cname); p != ""; p = parent(p) {
		if s.ents[p]--; s.ents[p] == 0 {
			delete(s.ents, p)
		}
	}
}

// SetMaxPending sets the most queries the server holds at once,
// replacing Options.MaxPending, as a resolver that got busy bounds its
// queue; 0 removes the bound. The queries held already count against it;
// none of them is dropped.
func (s *Server) SetMaxPending(n int) { s.maxPending.Store(int64(max(n, 0))) }

// SetReadBuffer sets the size, in bytes, of the UDP socket's receive
// buffer, replacing Options.ReadBuffer, as a resolver restarted with a
// smaller one: it applies to the socket now and to the one
// SetRefusing(false) opens. The kernel may round the size.
func (s *Server) SetReadBuffer(bytes int) error {
	s.udpMu.Lock()
	defer s.udpMu.Unlock()
	s.readBuffer = bytes
	if u, ok := s.udp.PacketConn.(*net.UDPConn); ok && !s.udpDown {
		return u.SetReadBuffer(bytes)
	}
	return nil
}

// SetLatency sets the delay before every answer, replacing
// Options.Latency. It applies to queries received from then on.
func (s *Server) SetLatency(d time.Duration) { s.latency.Store(int64(d)) }

// SetRefusing(true) closes the server's UDP socket, so that the queries
// sent to its port meet an ICMP port unreachable (a connection refused),
// as when a resolver restarts; SetRefusing(false) listens on the same
// port again. TCP is left alone.
func (s *Server) SetRefusing(refusing bool) error {
	s.udpMu.Lock()
	defer s.udpMu.Unlock()
	select {
	case <-s.done:
		return errors.New("dnstest: server closed")
	default:
	}
	if refusing == s.udpDown {
		return nil
	}
	if refusing {
		s.udpDown = true
		return s.udp.Shutdown()
	}
	// The old socket may take a moment to be released.
	var pc net.PacketConn
	var err error
	for range 200 {
		if pc, err = net.ListenPacket("udp4", s.addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("dnstest: listen udp again: %w", err)
	}
	if u, ok := pc.(*net.UDPConn); ok {
		_ = u.SetReadBuffer(s.readBuffer)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(s.serveDNS), UDPSize: dns.MaxMsgSize}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	failed := make(chan error, 1)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := srv.ActivateAndServe(); err != nil {
			failed <- err
		}
	}()
	select {
	case <-started:
	case err := <-failed:
		pc.Close()
		return fmt.Errorf("dnstest: serve udp again: %w", err)
	}
	s.udp, s.udpDown = srv, false
	return nil
}

// SetLying makes the server answer NXDOMAIN, without an SOA, to every
// question (the root's and the top-level domains' included), as captive
// portals, broken sandboxes and some filtering resolvers do; false makes
// it answer truthfully again.
func (s *Server) SetLying(lying bool) { s.lying.Store(lying) }

// Queries returns the number of queries received since the start or the
// last [Server.ResetCounts], counting those that were dropped or failed.
func (s *Server) Queries() int64 { return s.total.Load() }

// QueryCount returns the number of queries received for name (case
// insensitive, trailing dot optional) and type qtype (dns.TypeMX, ...).
func (s *Server) QueryCount(name string, qtype uint16) int64 {
	s.countMu.Lock()
	defer s.countMu.Unlock()
	return s.counts[countKey{canonical(name), qtype}]
}

// Dropped returns the number of queries dropped because
// [Options.MaxPending] queries were held already, since the start or the
// last [Server.ResetCounts]. They count in [Server.Queries] too.
func (s *Server) Dropped() int64 { return s.dropped.Load() }

// ResetCounts sets every query counter to zero.
func (s *Server) ResetCounts() {
	s.countMu.Lock()
	defer s.countMu.Unlock()
	clear(s.counts)
	s.total.Store(0)
	s.dropped.Store(0)
}

func (s *Server) count(name string, qtype uint16) {
	s.total.Add(1)
	s.countMu.Lock()
	s.counts[countKey{name, qtype}]++
	s.countMu.Unlock()
}

// lookupKind says how a name relates to the zone.
type lookupKind int

const (
	nameMissing lookupKind = iota // NXDOMAIN
	nameEmpty                     // empty non-terminal: NODATA
	nameFound                     // in the zone, by name, fallback or wildcard
)

// lookup finds the records answering for a canonical name.
func (s *Server) lookup(name string) (Domain, lookupKind) {
	s.mu.RLock()
	d, ok := s.zone[name]
	s.mu.RUnlock()
	if ok {
		return d, nameFound
	}
	if s.fallback != nil {
		if d, ok := s.fallback(strings.TrimSuffix(name, ".")); ok {
			if err := validate(name, d); err != nil {
				return Domain{Rcode: dns.RcodeServerFailure}, nameFound
			}
			// Its MX hosts answer for themselves from now on, as those
			// of the zone do: a validator asks for them after the MX.
			if len(d.MX) > 0 {
				s.mu.Lock()
				for _, mx := range d.MX {
					if h := canonical(mx.Host); h != "." {
						s.hosts[h] = mx
					}
				}
				s.mu.Unlock()
			}
			return d, nameFound
		}
	}
	if d, kind, ok := s.hostDomain(name); ok {
		return d, kind
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	// The root and the top-level domains exist, as on the Internet: a
	// resolver answers them NOERROR.
	if s.ents[name] > 0 || name == "." || strings.Count(name, ".") == 1 {
		return Domain{}, nameEmpty
	}
	// RFC 4592: the wildcard that applies is the one at the closest
	// encloser, the nearest ancestor that exists.
	for p := parent(name); p != ""; p = parent(p) {
		if d, ok := s.zone["*."+p]; ok {
			return d, nameFound
		}
		if _, ok := s.zone[p]; ok || s.ents[p] > 0 {
			break
		}
	}
	return Domain{}, nameMissing
}

// sleep waits for d or until the server closes; it reports whether the
// answer should still be sent.
func (s *Server) sleep(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.done:
		return false
	}
}

// garbage is what a Domain with Garbage set is answered with: the query
// id followed by bytes too short to be a DNS header.
var garbage = []byte{0xde, 0xad, 0xbe, 0xef}

// serveDNS answers one query. The dns package calls it in a goroutine of
// its own for each UDP packet, so slow answers do not hold up others.
func (s *Server) serveDNS(w dns.ResponseWriter, req *dns.Msg) {
	if len(req.Question) != 1 {
		s.total.Add(1)
		resp := new(dns.Msg).SetRcodeFormatError(req)
		_ = w.WriteMsg(resp)
		return
	}
	q := req.Question[0]
	name := canonical(q.Name)
	s.count(name, q.Qtype)
	// Every query held counts, bound or not, so that a bound set while
	// queries are held sees them.
	held := s.pending.Add(1)
	defer s.pending.Add(-1)
	if limit := s.maxPending.Load(); limit > 0 && held > limit {
		s.dropped.Add(1)
		return
	}

	d, kind := s.lookup(name)
	if d.Drop {
		return
	}
	if s.lying.Load() {
		// A resolver that denies every name, and says nothing more.
		resp := new(dns.Msg).SetReply(req)
		resp.RecursionAvailable = true
		resp.Rcode = dns.RcodeNameError
		_ = w.WriteMsg(resp)
		return
	}
	if !s.sleep(time.Duration(s.latency.Load()) + d.Latency) {
		return
	}
	if d.Garbage {
		_, _ = w.Write(append([]byte{byte(req.Id >> 8), byte(req.Id)}, garbage...))
		return
	}

	resp := new(dns.Msg).SetReply(req)
	resp.RecursionAvailable = true
	if d.Rcode != dns.RcodeSuccess {
		resp.Rcode = d.Rcode
		if d.Rcode == dns.RcodeNameError {
			resp.Ns = []dns.RR{soa(name, s.negTTL)}
		}
	} else {
		s.resolve(resp, q, d, kind)
		if s.additional && q.Qtype == dns.TypeMX {
			s.addHostAddrs(resp)
		}
	}
	if opt := req.IsEdns0(); opt != nil {
		resp.SetEdns0(opt.UDPSize(), false)
	}

	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		if d.Truncate {
			resp.Truncated = true
			resp.Answer, resp.Ns = nil, nil
		} else {
			size := dns.MinMsgSize
			if opt := req.IsEdns0(); opt != nil {
				size = int(opt.UDPSize())
			}
			resp.Truncate(size)
		}
	}
	if d.WrongID {
		resp.Id = req.Id + 1
	}
	_ = w.WriteMsg(resp)
}

// addHostAddrs puts the A and AAAA records of the MX hosts in resp's
// answer into its additional section, for hosts that have them directly
// (not through a CNAME).
func (s *Server) addHostAddrs(resp *dns.Msg) {
	for _, rr := range resp.Answer {
		mx, ok := rr.(*dns.MX)
		if !ok || mx.Mx == "." {
			continue
		}
		host := canonical(mx.Mx)
		d, kind := s.lookup(host)
		if kind != nameFound || d.CNAME != "" || d.Rcode != dns.RcodeSuccess || d.Drop || d.Garbage {
			continue
		}
		resp.Extra = append(resp.Extra, records(host, d, dns.TypeA)...)
		resp.Extra = append(resp.Extra, records(host, d, dns.TypeAAAA)...)
	}
}

// resolve fills resp with the answer for q, whose name has d and kind,
// following CNAMEs within the zone.
func (s *Server) resolve(resp *dns.Msg, q dns.Question, d Domain, kind lookupKind) {
	owner := q.Name
	name := canonical(q.Name)
	for hop := 0; ; hop++ {
		switch {
		case kind == nameMissing:
			resp.Rcode = dns.RcodeNameError
			resp.Ns = []dns.RR{soa(name, s.negTTL)}
			return
		case kind == nameEmpty:
			resp.Ns = []dns.RR{soa(name, s.negTTL)}
			return
		case d.Rcode != dns.RcodeSuccess:
			// A CNAME target that fails makes the whole answer fail.
			resp.Rcode = d.Rcode
			resp.Answer = nil
			if d.Rcode == dns.RcodeNameError {
				resp.Ns = []dns.RR{soa(name, s.negTTL)}
			}
			return
		case d.CNAME != "" && q.Qtype != dns.TypeCNAME:
			if hop == maxChase {
				// A loop or an overlong chain: resolvers give up.
				resp.Rcode = dns.RcodeServerFailure
				resp.Answer = nil
				return
			}
			resp.Answer = append(resp.Answer, records(owner, d, dns.TypeCNAME)...)
			owner = canonical(d.CNAME)
			name = owner
			d, kind = s.lookup(name)
			continue
		}
		rrs := records(owner, d, q.Qtype)
		if len(rrs) == 0 {
			resp.Ns = []dns.RR{soa(name, s.negTTL)}
		}
		resp.Answer = append(resp.Answer, rrs...)
		return
	}
}
