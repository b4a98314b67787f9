package dnstest_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/validmail/validmail/emailcheck/dnstest"
)

// answerTimeout is how long a client waits for an answer the server
// gives: long enough for any loaded machine.
const answerTimeout = 30 * time.Second

// exchange sends one query for name and qtype to s over network ("udp" or
// "tcp") and returns the answer.
func exchange(t *testing.T, s *dnstest.Server, network, name string, qtype uint16) (*dns.Msg, error) {
	t.Helper()
	m := new(dns.Msg).SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Net: network, Timeout: answerTimeout}
	r, _, err := c.Exchange(m, s.Addr())
	return r, err
}

// mustExchange is exchange over UDP that fails the test on error.
func mustExchange(t *testing.T, s *dnstest.Server, name string, qtype uint16) *dns.Msg {
	t.Helper()
	r, err := exchange(t, s, "udp", name, qtype)
	if err != nil {
		t.Fatalf("query %s %s: %v", name, dns.TypeToString[qtype], err)
	}
	return r
}

// rrText renders a record as "owner TTL TYPE data" with single spaces.
func rrText(rr dns.RR) string {
	return strings.Join(strings.Fields(strings.Replace(rr.String(), "\tIN\t", " ", 1)), " ")
}

func texts(rrs []dns.RR) []string {
	out := []string{}
	for _, rr := range rrs {
		out = append(out, rrText(rr))
	}
	return out
}

// negativeTTL returns the SOA minimum of a negative answer, or -1 when
// its authority section holds no SOA.
func negativeTTL(r *dns.Msg) int {
	for _, rr := range r.Ns {
		if soa, ok := rr.(*dns.SOA); ok {
			return int(soa.Minttl)
		}
	}
	return -1
}

var testZone = dnstest.Zone{
	"example.net": {
		MX:   []dnstest.MX{{Pref: 10, Host: "mx1.example.net"}, {Pref: 20, Host: "MX2.Example.Net."}},
		A:    []string{"192.0.2.1"},
		AAAA: []string{"2001:db8::1"},
		TXT:  []string{"v=spf1 -all"},
	},
	"nullmx.example.net.":  {MX: []dnstest.MX{{Pref: 0, Host: "."}}, TTL: 3600},
	"Upper.Example.NET":    {A: []string{"192.0.2.2"}},
	"a.b.c.example.org":    {A: []string{"192.0.2.3"}},
	"*.wild.example.org":   {MX: []dnstest.MX{{Pref: 5, Host: "mx.wild.example.org"}}},
	"sub.wild.example.org": {A: []string{"192.0.2.4"}},
	"long.example.net":     {TXT: []string{strings.Repeat("x", 300)}},
}

func TestAnswers(t *testing.T) {
	t.Parallel()
	s := dnstest.Start(t, testZone, nil)

	const (
		noerror  = dns.RcodeSuccess
		nxdomain = dns.RcodeNameError
	)
	tests := []struct {
		name    string
		qtype   uint16
		rcode   int
		answer  []string
		negTTL  int // SOA minimum in authority, -1 for none
		comment string
	}{
		{"example.net", dns.TypeMX, noerror, []string{
			"example.net. 300 MX 10 mx1.example.net.",
			"example.net. 300 MX 20 mx2.example.net.",
		}, -1, "MX records, hosts made canonical"},
		{"example.net", dns.TypeA, noerror, []string{"example.net. 300 A 192.0.2.1"}, -1, "A"},
		{"example.net", dns.TypeAAAA, noerror, []string{"example.net. 300 AAAA 2001:db8::1"}, -1, "AAAA"},
		{"example.net", dns.TypeTXT, noerror, []string{`example.net. 300 TXT "v=spf1 -all"`}, -1, "TXT"},
		{"EXAMPLE.net", dns.TypeA, noerror, []string{"EXAMPLE.net. 300 A 192.0.2.1"}, -1, "case-insensitive, query case kept"},
		{"upper.example.net", dns.TypeA, noerror, []string{"upper.example.net. 300 A 192.0.2.2"}, -1, "zone key case ignored"},
		{"nullmx.example.net", dns.TypeMX, noerror, []string{"nullmx.example.net. 3600 MX 0 ."}, -1, "null MX with TTL"},
		{"nullmx.example.net", dns.TypeA, noerror, []string{}, 60, "NODATA"},
		{"example.net", dns.TypeSRV, noerror, []string{}, 60, "NODATA for a type never held"},
		{"missing.example.net", dns.TypeMX, nxdomain, []string{}, 60, "NXDOMAIN"},
		{"b.c.example.org", dns.TypeA, noerror, []string{}, 60, "empty non-terminal"},
		{"example.org", dns.TypeMX, noerror, []string{}, 60, "empty non-terminal, higher"},
		{"x.a.b.c.example.org", dns.TypeA, nxdomain, []string{}, 60, "below a leaf"},
		{"foo.wild.example.org", dns.TypeMX, noerror, []string{"foo.wild.example.org. 300 MX 5 mx.wild.example.org."}, -1, "wildcard"},
		{"a.b.wild.example.org", dns.TypeMX, noerror, []string{"a.b.wild.example.org. 300 MX 5 mx.wild.example.org."}, -1, "wildcard, deeper"},
		{"foo.wild.example.org", dns.TypeA, noerror, []string{}, 60, "wildcard NODATA"},
		{"sub.wild.example.org", dns.TypeMX, noerror, []string{}, 60, "name in zone beats wildcard"},
		{"x.sub.wild.example.org", dns.TypeMX, nxdomain, []string{}, 60, "closest encloser has no wildcard"},
		{"wild.example.org", dns.TypeMX, noerror, []string{}, 60, "wildcard parent is an empty non-terminal"},
		{"long.example.net", dns.TypeTXT, noerror, []string{
			`long.example.net. 300 TXT "` + strings.Repeat("x", 255) + `" "` + strings.Repeat("x", 45) + `"`,
		}, -1, "long TXT split into strings"},
	}
	for _, tt := range tests {
		t.Run(tt.comment, func(t *testing.T) {
			t.Parallel()
			r := mustExchange(t, s, tt.name, tt.qtype)
			if r.Rcode != tt.rcode {
				t.Errorf("rcode = %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[tt.rcode])
			}
			if got := texts(r.Answer); !slices.Equal(got, tt.answer) {
				t.Errorf("answer = %q, want %q", got, tt.answer)
			}
			if got := negativeTTL(r); got != tt.negTTL {
				t.Errorf("SOA minimum = %d, want %d", got, tt.negTTL)
			}
			if !r.Response || !r.RecursionAvailable {
				t.Errorf("header: response=%v ra=%v", r.Response, r.RecursionAvailable)
			}
		})
	}
}

func TestNegativeTTLOption(t *testing.T) {
	t.Parallel()
	s := dnstest.Start(t, dnstest.Zone{"example.net": {}}, &dnstest.Options{NegativeTTL: 900})
	for _, name := range []string{"example.net", "nope.example.net"} {
		r := mustExchange(t, s, name, dns.TypeMX)
		if got := negativeTTL(r); got != 900 {
			t.Errorf("%s: SOA minimum = %d, want 900", name, got)
		}
		if soa := r.Ns[0]; soa.Header().Ttl != 900 {
			t.Errorf("%s: SOA TTL = %d, want 900", name, soa.Header().Ttl)
		}
	}
}

func TestCNAME(t *testing.T) {
	t.Parallel()
	zone := dnstest.Zone{
		"www.example.net":      {CNAME: "web.example.net", A: []string{"192.0.2.99"}},
		"web.example.net":      {CNAME: "host.example.com."},
		"host.example.com":     {A: []string{"192.0.2.7"}, MX: []dnstest.MX{{Pref: 10, Host: "mx.example.com"}}},
		"dangling.example.net": {CNAME: "gone.example.com"},
		"broken.example.net":   {CNAME: "fails.example.com"},
		"fails.example.com":    {Rcode: dns.RcodeServerFailure},
		"loop1.example.net":    {CNAME: "loop2.example.net"},
		"loop2.example.net":    {CNAME: "loop1.example.net"},
		"towild.example.net":   {CNAME: "x.wild.example.com"},
		"*.wild.example.com":   {A: []string{"192.0.2.8"}},
	}
	// c0 → c1 → ... → c8 is 8 hops and resolves; d0 → ... → d9 is 9.
	for i := range 8 {
		zone[fmt.Sprintf("c%d.example.net", i)] = dnstest.Domain{CNAME: fmt.Sprintf("c%d.example.net", i+1)}
	}
	zone["c8.example.net"] = dnstest.Domain{A: []string{"192.0.2.10"}}
	for i := range 9 {
		zone[fmt.Sprintf("d%d.example.net", i)] = dnstest.Domain{CNAME: fmt.Sprintf("d%d.example.net", i+1)}
	}
	zone["d9.example.net"] = dnstest.Domain{A: []string{"192.0.2.11"}}
	s := dnstest.Start(t, zone, nil)

	tests := []struct {
		name   string
		qtype  uint16
		rcode  int
		answer []string
	}{
		{"www.example.net", dns.TypeA, dns.RcodeSuccess, []string{
			"www.example.net. 300 CNAME web.example.net.",
			"web.example.net. 300 CNAME host.example.com.",
			"host.example.com. 300 A 192.0.2.7",
		}},
		{"www.example.net", dns.TypeMX, dns.RcodeSuccess, []string{
			"www.example.net. 300 CNAME web.example.net.",
			"web.example.net. 300 CNAME host.example.com.",
			"host.example.com. 300 MX 10 mx.example.com.",
		}},
		{"www.example.net", dns.TypeTXT, dns.RcodeSuccess, []string{
			"www.example.net. 300 CNAME web.example.net.",
			"web.example.net. 300 CNAME host.example.com.",
		}},
		{"www.example.net", dns.TypeCNAME, dns.RcodeSuccess, []string{
			"www.example.net. 300 CNAME web.example.net.",
		}},
		{"dangling.example.net", dns.TypeMX, dns.RcodeNameError, []string{
			"dangling.example.net. 300 CNAME gone.example.com.",
		}},
		{"broken.example.net", dns.TypeA, dns.RcodeServerFailure, []string{}},
		{"loop1.example.net", dns.TypeA, dns.RcodeServerFailure, []string{}},
		{"towild.example.net", dns.TypeA, dns.RcodeSuccess, []string{
			"towild.example.net. 300 CNAME x.wild.example.com.",
			"x.wild.example.com. 300 A 192.0.2.8",
		}},
		{"d0.example.net", dns.TypeA, dns.RcodeServerFailure, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+dns.TypeToString[tt.qtype], func(t *testing.T) {
			t.Parallel()
			r := mustExchange(t, s, tt.name, tt.qtype)
			if r.Rcode != tt.rcode {
				t.Errorf("rcode = %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[tt.rcode])
			}
			if got := texts(r.Answer); !slices.Equal(got, tt.answer) {
				t.Errorf("answer = %q, want %q", got, tt.answer)
			}
		})
	}

	t.Run("8 hops", func(t *testing.T) {
		t.Parallel()
		r := mustExchange(t, s, "c0.example.net", dns.TypeA)
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 9 {
			t.Fatalf("rcode %s, %d records, want NOERROR with 8 CNAMEs and an A", dns.RcodeToString[r.Rcode], len(r.Answer))
		}
		if a, ok := r.Answer[8].(*dns.A); !ok || a.A.String() != "192.0.2.10" {
			t.Errorf("last record = %v", r.Answer[8])
		}
	})
}

func TestRcode(t *testing.T) {
	t.Parallel()
	s := dnstest.Start(t, dnstest.Zone{
		"servfail.example.net": {Rcode: dns.RcodeServerFailure, A: []string{"192.0.2.1"}},
		"refused.example.net":  {Rcode: dns.RcodeRefused},
		"nx.example.net":       {Rcode: dns.RcodeNameError},
	}, nil)
	for _, tt := range []struct {
		name  string
		rcode int
	}{
		{"servfail.example.net", dns.RcodeServerFailure},
		{"refused.example.net", dns.RcodeRefused},
		{"nx.example.net", dns.RcodeNameError},
	} {
		for _, qtype := range []uint16{dns.TypeA, dns.TypeMX} {
			r := mustExchange(t, s, tt.name, qtype)
			if r.Rcode != tt.rcode || len(r.Answer) != 0 {
				t.Errorf("%s %s: rcode %s with %d records, want %s and none",
					tt.name, dns.TypeToString[qtype], dns.RcodeToString[r.Rcode], len(r.Answer), dns.RcodeToString[tt.rcode])
			}
		}
	}
	if r := mustExchange(t, s, "nx.example.net", dns.TypeA); negativeTTL(r) != 60 {
		t.Errorf("NXDOMAIN by rcode carries no SOA: %v", r.Ns)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestFaults(t *testing.T) {
	t.Parallel()
	s := dnstest.Start(t, dnstest.Zone{
		"drop.example.net":    {Drop: true, A: []string{"192.0.2.1"}},
		"garbage.example.net": {Garbage: true, A: []string{"192.0.2.1"}},
		"wrongid.example.net": {WrongID: true, A: []string{"192.0.2.1"}},
		"*.drop.example.org":  {Drop: true},
	}, nil)
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			t.Parallel()
			// Dropped queries are waited for briefly: they never come.
			dropped := &dns.Client{Net: network, Timeout: 300 * time.Millisecond}
			c := &dns.Client{Net: network, Timeout: time.Hour}
			q := func(name string) (*dns.Msg, time.Duration, error) {
				start := time.Now()
				r, _, err := c.Exchange(new(dns.Msg).SetQuestion(name, dns.TypeA), s.Addr())
				return r, time.Since(start), err
			}
			qd := func(name string) (*dns.Msg, time.Duration, error) {
				r, _, err := dropped.Exchange(new(dns.Msg).SetQuestion(name, dns.TypeA), s.Addr())
				return r, 0, err
			}
			if _, _, err := qd("drop.example.net."); !isTimeout(err) {
				t.Errorf("drop: err = %v, want a timeout", err)
			}
			if _, _, err := qd("x.drop.example.org."); !isTimeout(err) {
				t.Errorf("drop by wildcard: err = %v, want a timeout", err)
			}
			if r, d, err := q("garbage.example.net."); err == nil || isTimeout(err) {
				t.Errorf("garbage: answer %v, err = %v, want a parse error", r, err)
			} else if d > time.Minute { // the client would wait an hour
				t.Errorf("garbage took %v: it was not answered at once", d)
			}
			// The client ignores the mismatched answer over UDP and
			// rejects it over TCP.
			if r, _, err := qd("wrongid.example.net."); !errors.Is(err, dns.ErrId) && !isTimeout(err) {
				t.Errorf("wrong id: answer %v, err = %v, want %v or a timeout", r, err, dns.ErrId)
			}
		})
	}
}

// rawExchange sends query over network and returns the raw answer, without
// the client's checks.
func rawExchange(t *testing.T, s *dnstest.Server, network string, query *dns.Msg) *dns.Msg {
	t.Helper()
	conn, err := net.DialTimeout(network, s.Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	dc := &dns.Conn{Conn: conn}
	if err := dc.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := dc.WriteMsg(query); err != nil {
		t.Fatal(err)
	}
	r, err := dc.ReadMsg()
	if err != nil && !errors.Is(err, dns.ErrId) {
		t.Fatal(err)
	}
	return r
}

func TestWrongIDAnswer(t *testing.T) {
	t.Parallel()
	s := dnstest.Start(t, dnstest.Zone{"wrongid.example.net": {WrongID: true, A: []string{"192.0.2.1"}}}, nil)
	for _, network := range []string{"udp", "tcp"} {
		q := new(dns.Msg).SetQuestion("wrongid.example.net.", dns.TypeA)
		r := rawExchange(t, s, network, q)
		if r.Id == q.Id || len(r.Answer) != 1 {
			t.Errorf("%s: answer id %d for query id %d with %d records", network, r.Id, q.Id, len(r.Answer))
		}
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	s := dnstest.Start(t, dnstest.Zone{
		"tc.example.net": {Truncate: true, MX: []dnstest.MX{{Pref: 10, Host: "mx.example.net"}}},
	}, nil)

	r, err := exchange(t, s, "udp", "tc.example.net", dns.TypeMX)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Truncated || len(r.Answer) != 0 {
		t.Errorf("UDP: TC=%v with %d records, want TC and none", r.Truncated, len(r.Answer))
	}
	r, err = exchange(t, s, "tcp", "tc.example.net", dns.TypeMX)
	if err != nil {
		t.Fatal(err)
	}
	if r.Truncated || len(r.Answer) != 1 {
		t.Errorf("TCP: TC=%v with %d records, want the full answer", r.Truncated, len(r.Answer))
	}

	// A stub resolver retries over TCP on the same address by itself.
	res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, s.Addr())
	}}
	s.ResetCounts()
	mxs, err := res.LookupMX(t.Context(), "tc.example.net")
	if err != nil {
		t.Fatal(err)
	}
	if len(mxs) != 1 || mxs[0].Host != "mx.example.net." || mxs[0].Pref != 10 {
		t.Errorf("LookupMX = %v", mxs)
	}
	if n := s.QueryCount("tc.example.net", dns.TypeMX); n < 2 {
		t.Errorf("QueryCount = %d, want a UDP and a TCP query", n)
	}
}

func TestTruncateBySize(t *testing.T) {
	t.Parallel()
	var txt []string
	for i := range 20 {
		txt = append(txt, fmt.Sprintf("record %02d %s", i, strings.Repeat("y", 60)))
	}
	s := dnstest.Start(t, dnstest.Zone{"big.example.net": {TXT: txt}}, nil)

	r := mustExchange(t, s, "big.example.net", dns.TypeTXT)
	if !r.Truncated || len(r.Answer) == 20 {
		t.Errorf("UDP without EDNS0: TC=%v with %d records, want truncation", r.Truncated, len(r.Answer))
	}

	m := new(dns.Msg).SetQuestion("big.example.net.", dns.TypeTXT).SetEdns0(4096, false)
	r, _, err := (&dns.Client{}).Exchange(m, s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if r.Truncated || len(r.Answer) != 20 {
		t.Errorf("UDP with EDNS0 4096: TC=%v with %d records, want all 20", r.Truncated, len(r.Answer))
	}
	if opt := r.IsEdns0(); opt == nil {
		t.Error("EDNS0 query answered without OPT record")
	}

	r, err = exchange(t, s, "tcp", "big.example.net", dns.TypeTXT)
	if err != nil {
		t.Fatal(err)
	}
	if r.Truncated || len(r.Answer) != 20 {
		t.Errorf("TCP: TC=%v with %d records, want all 20", r.Truncated, len(r.Answer))
	}
}

func TestLatency(t *testing.T) {
	t.Parallel()
	s := dnstest.Start(t, dnstest.Zone{
		"slow.example.net":  {Latency: 300 * time.Millisecond, A: []string{"192.0.2.1"}},
		"stuck.example.net": {Latency: time.Hour, A: []string{"192.0.2.1"}},
		"fast.example.net":  {A: []string{"192.0.2.2"}},
		"drop.example.net":  {Drop: true},
	}, nil)

	timed := func(name string) time.Duration {
		start := time.Now()
		mustExchange(t, s, name, dns.TypeA)
		return time.Since(start)
	}
	if d := timed("slow.example.net"); d < 300*time.Millisecond {
		t.Errorf("slow name answered after %v, want at least 300ms", d)
	}

	// A stuck and a dropped name do not hold up a fast one: it is
	// answered while they wait (the stuck one for an hour).
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, name := range []string{"stuck.example.net.", "drop.example.net."} {
		wg.Go(func() {
			c := &dns.Client{Timeout: 300 * time.Millisecond}
			_, _, _ = c.Exchange(new(dns.Msg).SetQuestion(name, dns.TypeA), s.Addr())
		})
	}
	for deadline := time.Now().Add(time.Minute); s.QueryCount("stuck.example.net", dns.TypeA) == 0 || s.QueryCount("drop.example.net", dns.TypeA) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stuck and dropped queries did not arrive")
		}
	}
	mustExchange(t, s, "fast.example.net", dns.TypeA)

	s.SetLatency(200 * time.Millisecond)
	if d := timed("fast.example.net"); d < 200*time.Millisecond {
		t.Errorf("with server latency 200ms, answered after %v", d)
	}
	if d := timed("slow.example.net"); d < 500*time.Millisecond {
		t.Errorf("with server latency 200ms and name latency 300ms, answered after %v", d)
	}
	// Latency set back to 0 applies: an hour's would fail the exchange.
	s.SetLatency(time.Hour)
	s.SetLatency(0)
	mustExchange(t, s, "fast.example.net", dns.TypeA)
}

func TestLatencyOption(t *testing.T) {
	t.Parallel()
	s := dnstest.Start(t, dnstest.Zone{"example.net": {}}, &dnstest.Options{Latency: 150 * time.Millisecond})
	start := time.Now()
	mustExchange(t, s, "example.net", dns.TypeMX)
	mustExchange(t, s, "missing.example.net", dns.TypeMX)
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("two queries with 150ms latency took %v", d)
	}
}

// TestConcurrentQueries is not parallel: it measures time, and the other
// tests would compete for the CPU.
func TestConcurrentQueries(t *testing.T) {
	const n = 1000
	zone := dnstest.Zone{}
	for i := range 50 {
		zone[fmt.Sprintf("d%d.example.net", i)] = dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx.example.net"}}}
	}
	s := dnstest.Start(t, zone, nil)

	burst := func() time.Duration {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		start := time.Now()
		for i := range n {
			wg.Go(func() {
				c := &dns.Client{Timeout: answerTimeout}
				m := new(dns.Msg).SetQuestion(fmt.Sprintf("d%d.example.net.", i%50), dns.TypeMX)
				r, _, err := c.Exchange(m, s.Addr())
				switch {
				case err != nil:
					errs <- err
				case len(r.Answer) != 1:
					errs <- fmt.Errorf("%s: %d records", m.Question[0].Name, len(r.Answer))
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		return elapsed
	}

	// The cost of a burst without latency (sockets, scheduling) depends
	// on the machine's load; the latency must add about 20ms to it.
	// Answered one after another the queries would add 20s: half of that
	// tells the two apart on any machine.
	base := burst()
	s.SetLatency(20 * time.Millisecond)
	elapsed := burst()
	t.Logf("%d concurrent queries: %v without latency, %v with 20ms latency", n, base, elapsed)
	if elapsed > base+10*time.Second {
		t.Errorf("20ms of latency made %d concurrent queries take %v instead of %v", n, elapsed, base)
	}
	if got := s.Queries(); got != 2*n {
		t.Errorf("Queries() = %d, want %d", got, 2*n)
	}
}

func TestCounters(t *testing.T) {
	t.Parallel()
	s := dnstest.Start(t, dnstest.Zone{
		"example.net":      {A: []string{"192.0.2.1"}},
		"drop.example.net": {Drop: true},
	}, nil)
	mustExchange(t, s, "example.net", dns.TypeA)
	mustExchange(t, s, "EXAMPLE.NET.", dns.TypeA)
	mustExchange(t, s, "example.net", dns.TypeMX)
	mustExchange(t, s, "missing.example.net", dns.TypeMX)
	if _, err := exchange(t, s, "tcp", "example.net", dns.TypeA); err != nil {
		t.Fatal(err)
	}
	c := &dns.Client{Timeout: 100 * time.Millisecond}
	_, _, _ = c.Exchange(new(dns.Msg).SetQuestion("drop.example.net.", dns.TypeTXT), s.Addr())

	for _, tt := range []struct {
		name  string
		qtype uint16
		want  int64
	}{
		{"example.net", dns.TypeA, 3},
		{"Example.Net.", dns.TypeA, 3},
		{"example.net", dns.TypeMX, 1},
		{"example.net", dns.TypeAAAA, 0},
		{"missing.example.net", dns.TypeMX, 1},
		{"drop.example.net", dns.TypeTXT, 1},
		{"other.example.net", dns.TypeA, 0},
	} {
		if got := s.QueryCount(tt.name, tt.qtype); got != tt.want {
			t.Errorf("QueryCount(%s, %s) = %d, want %d", tt.name, dns.TypeToString[tt.qtype], got, tt.want)
		}
	}
	if got := s.Queries(); got != 6 {
		t.Errorf("Queries() = %d, want 6", got)
	}
	s.ResetCounts()
	if s.Queries() != 0 || s.QueryCount("example.net", dns.TypeA) != 0 {
		t.Errorf("after ResetCounts: Queries %d, QueryCount %d", s.Queries(), s.QueryCount("example.net", dns.TypeA))
	}
	mustExchange(t, s, "example.net", dns.TypeA)
	if s.Queries() != 1 || s.QueryCount("example.net", dns.TypeA) != 1 {
		t.Errorf("counting after ResetCounts: Queries %d, QueryCount %d", s.Queries(), s.QueryCount("example.net", dns.TypeA))
	}
}

func TestSetDelete(t *testing.T) {
	t.Parallel()
	s := dnstest.Start(t, dnstest.Zone{}, nil)
	rcode := func(name string) int { return mustExchange(t, s, name, dns.TypeA).Rcode }

	if got := rcode("new.example.net"); got != dns.RcodeNameError {
		t.Fatalf("before Set: rcode %s", dns.RcodeToString[got])
	}
	s.Set("New.Example.Net.", dnstest.Domain{A: []string{"192.0.2.1"}})
	if r := mustExchange(t, s, "new.example.net", dns.TypeA); len(r.Answer) != 1 {
		t.Fatalf("after Set: %v", r)
	}
	s.Set("new.example.net", dnstest.Domain{A: []string{"192.0.2.2", "192.0.2.3"}})
	if r := mustExchange(t, s, "new.example.net", dns.TypeA); len(r.Answer) != 2 {
		t.Fatalf("after replacing: %v", r)
	}
	if got := rcode("example.net"); got != dns.RcodeSuccess {
		t.Errorf("parent is an empty non-terminal, rcode %s", dns.RcodeToString[got])
	}
	s.Set("other.example.net", dnstest.Domain{})
	s.Delete("new.example.net")
	s.Delete("never.example.net")
	if got := rcode("new.example.net"); got != dns.RcodeNameError {
		t.Errorf("after Delete: rcode %s", dns.RcodeToString[got])
	}
	if got := rcode("example.net"); got != dns.RcodeSuccess {
		t.Errorf("parent of a remaining name: rcode %s", dns.RcodeToString[got])
	}
	s.Delete("OTHER.example.net.")
	if got := rcode("example.net"); got != dns.RcodeNameError {
		t.Errorf("parent of no name: rcode %s", dns.RcodeToString[got])
	}
}

func TestSetWhileServing(t *testing.T) {
	t.Parallel()
	s := dnstest.Start(t, dnstest.Zone{"flip.example.net": {}}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			if i%2 == 0 {
				s.Set("flip.example.net", dnstest.Domain{A: []string{"192.0.2.1"}})
				s.SetLatency(time.Millisecond)
			} else {
				s.Delete("flip.example.net")
				s.SetLatency(0)
			}
			_ = s.QueryCount("flip.example.net", dns.TypeA)
		}
	})
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				r, err := exchange(t, s, "udp", "flip.example.net", dns.TypeA)
				if err != nil {
					t.Error(err)
					return
				}
				if r.Rcode != dns.RcodeSuccess && r.Rcode != dns.RcodeNameError {
					t.Errorf("rcode %s", dns.RcodeToString[r.Rcode])
				}
			}
		})
	}
	wg.Wait()
}

func TestFallback(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var asked []string
	s := dnstest.Start(t, dnstest.Zone{
		"zone.example.net":   {A: []string{"192.0.2.1"}},
		"*.wild.example.net": {A: []string{"192.0.2.9"}},
	}, &dnstest.Options{
		Fallback: func(name string) (dnstest.Domain, bool) {
			mu.Lock()
			asked = append(asked, name)
			mu.Unlock()
			switch {
			case name == "bad.gen.example":
				return dnstest.Domain{A: []string{"not-an-ip"}}, true
			case strings.HasSuffix(name, ".gen.example"):
				return dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx." + name}}}, true
			}
			return dnstest.Domain{}, false
		},
	})

	r := mustExchange(t, s, "D4711.Gen.Example.", dns.TypeMX)
	if got := texts(r.Answer); !slices.Equal(got, []string{"D4711.Gen.Example. 300 MX 10 mx.d4711.gen.example."}) {
		t.Errorf("generated answer = %q", got)
	}
	if r := mustExchange(t, s, "zone.example.net", dns.TypeA); len(r.Answer) != 1 {
		t.Errorf("zone name: %v", r)
	}
	if r := mustExchange(t, s, "x.wild.example.net", dns.TypeA); len(r.Answer) != 1 {
		t.Errorf("wildcard after fallback declined: %v", r)
	}
	if r := mustExchange(t, s, "none.example.net", dns.TypeA); r.Rcode != dns.RcodeNameError {
		t.Errorf("declined by fallback: rcode %s", dns.RcodeToString[r.Rcode])
	}
	if r := mustExchange(t, s, "bad.gen.example", dns.TypeA); r.Rcode != dns.RcodeServerFailure {
		t.Errorf("invalid generated records: rcode %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"d4711.gen.example", "x.wild.example.net", "none.example.net", "bad.gen.example"}
	if !slices.Equal(asked, want) {
		t.Errorf("fallback asked %q, want %q", asked, want)
	}
}

func TestInvalidZone(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		zone dnstest.Zone
	}{
		{"IPv6 in A", dnstest.Zone{"example.net": {A: []string{"2001:db8::1"}}}},
		{"IPv4 in AAAA", dnstest.Zone{"example.net": {AAAA: []string{"192.0.2.1"}}}},
		{"mapped IPv4 in AAAA", dnstest.Zone{"example.net": {AAAA: []string{"::ffff:192.0.2.1"}}}},
		{"not an address", dnstest.Zone{"example.net": {A: []string{"example"}}}},
		{"bad MX host", dnstest.Zone{"example.net": {MX: []dnstest.MX{{Pref: 10, Host: "a..b"}}}}},
		{"bad CNAME", dnstest.Zone{"example.net": {CNAME: "a..b"}}},
		{"bad name", dnstest.Zone{"a..example.net": {}}},
		{"root", dnstest.Zone{".": {}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := dnstest.NewServer(tt.zone, nil)
			if err == nil {
				s.Close()
				t.Fatal("NewServer accepted an invalid zone")
			}
			if !strings.HasPrefix(err.Error(), "dnstest: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
	t.Run("Set panics", func(t *testing.T) {
		t.Parallel()
		s := dnstest.Start(t, nil, nil)
		defer func() {
			if recover() == nil {
				t.Error("Set accepted an invalid address")
			}
		}()
		s.Set("example.net", dnstest.Domain{A: []string{"999.1.1.1"}})
	})
}

func TestSamePort(t *testing.T) {
	t.Parallel()
	s := dnstest.Start(t, dnstest.Zone{"example.net": {A: []string{"192.0.2.1"}}}, nil)
	host, port, err := net.SplitHostPort(s.Addr())
	if err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("Addr() = %q", s.Addr())
	}
	for _, network := range []string{"udp", "tcp"} {
		r, err := exchange(t, s, network, "example.net", dns.TypeA)
		if err != nil || len(r.Answer) != 1 {
			t.Errorf("%s: %v, %v", network, r, err)
		}
	}
}

// serverGoroutines returns the stacks of goroutines running server code.
func serverGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var found []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "miekg/dns.(*Server)") || strings.Contains(g, "dnstest.(*Server)") {
			found = append(found, g)
		}
	}
	return found
}

// TestCloseLeavesNoGoroutines is not parallel: it counts goroutines.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	s, err := dnstest.NewServer(dnstest.Zone{
		"slow.example.net": {Latency: time.Minute},
		"drop.example.net": {Drop: true},
		"example.net":      {A: []string{"192.0.2.1"}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}

	// Leave work in flight: delayed answers over UDP and TCP, a dropped
	// query, and an idle TCP connection.
	var clients sync.WaitGroup
	for _, network := range []string{"udp", "tcp"} {
		for _, name := range []string{"slow.example.net.", "drop.example.net."} {
			clients.Go(func() {
				c := &dns.Client{Net: network, Timeout: 500 * time.Millisecond}
				_, _, _ = c.Exchange(new(dns.Msg).SetQuestion(name, dns.TypeA), s.Addr())
			})
		}
	}
	conn, err := (&dns.Client{Net: "tcp"}).Dial(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.WriteMsg(new(dns.Msg).SetQuestion("example.net.", dns.TypeA)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ReadMsg(); err != nil {
		t.Fatal(err)
	}
	for s.Queries() < 5 {
		time.Sleep(5 * time.Millisecond)
	}

	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 30*time.Second { // the pending answer would take a minute
		t.Errorf("Close took %v with answers pending", d)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	// A goroutine that has returned may still show in a snapshot for a
	// moment, so look again until a deadline.
	g := serverGoroutines()
	for deadline := time.Now().Add(time.Minute); len(g) > 0 && time.Now().Before(deadline); g = serverGoroutines() {
		time.Sleep(10 * time.Millisecond)
	}
	if len(g) > 0 {
		t.Errorf("after Close, %d server goroutines remain:\n%s", len(g), strings.Join(g, "\n\n"))
	}
	if _, err := exchange(t, s, "tcp", "example.net", dns.TypeA); err == nil {
		t.Error("server still answers over TCP after Close")
	}

	clients.Wait()
	conn.Close()
	deadline := time.Now().Add(time.Minute)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("goroutines: %d before the server, %d after Close", before, after)
	}
}

func BenchmarkExchangeUDP(b *testing.B) {
	s := dnstest.Start(b, dnstest.Zone{"example.net": {MX: []dnstest.MX{{Pref: 10, Host: "mx.example.net"}}}}, nil)
	c := &dns.Client{Timeout: time.Second}
	m := new(dns.Msg).SetQuestion("example.net.", dns.TypeMX)
	for b.Loop() {
		if _, _, err := c.Exchange(m, s.Addr()); err != nil {
			b.Fatal(err)
		}
	}
}

// MX hosts answer for their own names: with their Addrs, with
// DefaultMXAddr, not at all when Missing or under NoMXAddrs, and as the
// zone says when it has an entry for them; Additional puts their addresses
// into MX answers.
func TestMXHostAddresses(t *testing.T) {
	t.Parallel()
	zone := dnstest.Zone{
		"a.example.net": {MX: []dnstest.MX{
			{Pref: 10, Host: "given.example.net", Addrs: []string{"192.0.2.9", "2001:db8::9"}},
			{Pref: 20, Host: "default.example.net"},
			{Pref: 30, Host: "missing.example.net", Missing: true},
			{Pref: 40, Host: "zoned.example.net"},
		}},
		"zoned.example.net": {A: []string{"192.0.2.77"}},
	}
	ask := func(srv *dnstest.Server, name string, qtype uint16) *dns.Msg {
		t.Helper()
		m := new(dns.Msg).SetQuestion(dns.Fqdn(name), qtype)
		r, err := dns.Exchange(m, srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	addrs := func(rrs []dns.RR) []string {
		var out []string
		for _, rr := range rrs {
			switch r := rr.(type) {
			case *dns.A:
				out = append(out, r.Header().Name+" "+r.A.String())
			case *dns.AAAA:
				out = append(out, r.Header().Name+" "+r.AAAA.String())
			}
		}
		return out
	}
	srv := dnstest.Start(t, zone, nil)
	for _, tc := range []struct {
		name  string
		qtype uint16
		rcode int
		want  []string
	}{
		{"given.example.net", dns.TypeA, dns.RcodeSuccess, []string{"given.example.net. 192.0.2.9"}},
		{"given.example.net", dns.TypeAAAA, dns.RcodeSuccess, []string{"given.example.net. 2001:db8::9"}},
		{"default.example.net", dns.TypeA, dns.RcodeSuccess, []string{"default.example.net. " + dnstest.DefaultMXAddr}},
		{"default.example.net", dns.TypeAAAA, dns.RcodeSuccess, nil},
		{"missing.example.net", dns.TypeA, dns.RcodeNameError, nil},
		{"zoned.example.net", dns.TypeA, dns.RcodeSuccess, []string{"zoned.example.net. 192.0.2.77"}},
	} {
		r := ask(srv, tc.name, tc.qtype)
		if got := addrs(r.Answer); r.Rcode != tc.rcode || !slices.Equal(got, tc.want) {
			t.Errorf("%s %s: rcode %d, %v; want %d, %v", tc.name, dns.TypeToString[tc.qtype], r.Rcode, got, tc.rcode, tc.want)
		}
	}
	if r := ask(srv, "a.example.net", dns.TypeMX); len(r.Extra) != 0 {
		t.Errorf("additional records without Options.Additional: %v", r.Extra)
	}

	strict := dnstest.Start(t, zone, &dnstest.Options{NoMXAddrs: true, Additional: true})
	if r := ask(strict, "default.example.net", dns.TypeA); r.Rcode != dns.RcodeNameError {
		t.Errorf("NoMXAddrs: default host answered rcode %d, want NXDOMAIN", r.Rcode)
	}
	r := ask(strict, "a.example.net", dns.TypeMX)
	want := []string{"given.example.net. 192.0.2.9", "given.example.net. 2001:db8::9", "zoned.example.net. 192.0.2.77"}
	if got := addrs(r.Extra); !slices.Equal(got, want) {
		t.Errorf("additional section %v, want %v", got, want)
	}
}

// With MaxPending queries held (waiting out their latency), the next one
// is dropped and counted; once they are answered there is room again.
func TestMaxPending(t *testing.T) {
	t.Parallel()
	s := dnstest.Start(t, dnstest.Zone{
		"slow.example.net": {Latency: time.Minute, A: []string{"192.0.2.1"}},
		"fast.example.net": {A: []string{"192.0.2.2"}},
	}, &dnstest.Options{MaxPending: 2})
	conn, err := net.Dial("udp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	send := func(name string) {
		wire, err := new(dns.Msg).SetQuestion(name, dns.TypeA).Pack()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(wire); err != nil {
			t.Fatal(err)
		}
	}
	waitQueries := func(n int64) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); s.Queries() < n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the server received %d queries; want %d", s.Queries(), n)
			}
		}
	}
	send("slow.example.net.")
	send("slow.example.net.")
	waitQueries(2)
	send("fast.example.net.")
	waitQueries(3)
	if got := s.Dropped(); got != 1 {
		t.Fatalf("Dropped() = %d with the queue full; want 1", got)
	}
	// The slow answers still hold their places: a fast name is dropped
	// too, and a client gets no answer.
	c := &dns.Client{Timeout: 200 * time.Millisecond}
	if _, _, err := c.Exchange(new(dns.Msg).SetQuestion("fast.example.net.", dns.TypeA), s.Addr()); !isTimeout(err) {
		t.Fatalf("with the queue full: err %v; want a timeout", err)
	}
	if got := s.Dropped(); got != 2 {
		t.Fatalf("Dropped() = %d; want 2", got)
	}
	// Over TCP a query is held the same way.
	if _, err := exchange(t, s, "tcp", "fast.example.net", dns.TypeA); err == nil {
		t.Fatal("over TCP with the queue full: answered")
	}
	s.ResetCounts()
	if s.Dropped() != 0 {
		t.Errorf("after ResetCounts: Dropped() = %d", s.Dropped())
	}

	// A server without the bound holds any number.
	free := dnstest.Start(t, dnstest.Zone{"fast.example.net": {A: []string{"192.0.2.2"}}}, nil)
	mustExchange(t, free, "fast.example.net", dns.TypeA)
	if free.Dropped() != 0 {
		t.Errorf("unbounded server dropped %d", free.Dropped())
	}
}

// SetMaxPending bounds the queue of a server started without a bound,
// counting the queries it holds already, and 0 lifts the bound again.
func TestSetMaxPending(t *testing.T) {
	t.Parallel()
	s := dnstest.Start(t, dnstest.Zone{
		"slow.example.net": {Latency: time.Minute, A: []string{"192.0.2.1"}},
		"fast.example.net": {A: []string{"192.0.2.2"}},
	}, nil)
	conn, err := net.Dial("udp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	wire, err := new(dns.Msg).SetQuestion("slow.example.net.", dns.TypeA).Pack()
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := conn.Write(wire); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); s.Queries() < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server received %d queries; want 2", s.Queries())
		}
	}
	mustExchange(t, s, "fast.example.net", dns.TypeA) // no bound yet
	s.SetMaxPending(2)
	c := &dns.Client{Timeout: 200 * time.Millisecond}
	if _, _, err := c.Exchange(new(dns.Msg).SetQuestion("fast.example.net.", dns.TypeA), s.Addr()); !isTimeout(err) {
		t.Fatalf("with two slow queries held under a bound of 2: err %v; want a timeout", err)
	}
	if got := s.Dropped(); got != 1 {
		t.Fatalf("Dropped() = %d; want 1", got)
	}
	s.SetMaxPending(0)
	mustExchange(t, s, "fast.example.net", dns.TypeA)
	if got := s.Dropped(); got != 1 {
		t.Errorf("Dropped() = %d after the bound was lifted; want 1", got)
	}
}

// SetReadBuffer resizes the live socket's receive buffer and the one a
// restart opens: the server answers throughout.
func TestSetReadBuffer(t *testing.T) {
	t.Parallel()
	s := dnstest.Start(t, dnstest.Zone{"fast.example.net": {A: []string{"192.0.2.2"}}}, nil)
	if err := s.SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	mustExchange(t, s, "fast.example.net", dns.TypeA)
	if err := s.SetRefusing(true); err != nil {
		t.Fatal(err)
	}
	if err := s.SetReadBuffer(8192); err != nil {
		t.Fatalf("while refusing: %v", err)
	}
	if err := s.SetRefusing(false); err != nil {
		t.Fatal(err)
	}
	mustExchange(t, s, "fast.example.net", dns.TypeA)
}
