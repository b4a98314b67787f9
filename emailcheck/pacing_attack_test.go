package emailcheck_test

import (
	"context"
	"fmt"
	"hash/crc32"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
)

// pacingZone serves n domains under .pace; every tenth is slow (answers
// after slow) when slow > 0.
func pacingZone(slow time.Duration) *dnstest.Options {
	return &dnstest.Options{Latency: 20 * time.Millisecond, Fallback: func(name string) (dnstest.Domain, bool) {
		name = strings.TrimSuffix(name, ".")
		if !strings.HasSuffix(name, ".pace") || strings.HasPrefix(name, "mx.") {
			return dnstest.Domain{}, false
		}
		spread := crc32.ChecksumIEEE([]byte(name))
		host := fmt.Sprintf("mx%d.provider.net", spread%8)
		if spread%5 == 0 {
			host = "mx." + name
		}
		d := dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: host}}}
		if slow > 0 && strings.HasPrefix(name, "slow") {
			d.Latency = slow
		}
		return d, true
	}}
}

type paceCase struct {
	name      string
	opts      func() *dnstest.Options
	servers   func(t *testing.T, srv *dnstest.Server) []string
	during    func(srv *dnstest.Server) // called once the burst started
	before    func(srv *dnstest.Server)
	n         int
	slowShare bool
	// defaults: the default QueryTimeout and Retries, as a deployment runs
	defaults bool
	// mayLose is how many domains may end UNKNOWN: on a path that drops
	// one query in ten, a name loses all four attempts about once in ten
	// thousand, whatever the pacing.
	mayLose int64
}

// TestDNSPacingHostileResolvers validates a burst of a thousand existing
// domains under hostile resolver conditions (a 4 KiB receive buffer, a
// bounded queue, slow names, a lossy path, a dead first nameserver, a
// resolver that refuses then comes back) and logs the verdicts that are
// not LIKELY, the queries, and the questions that reached the server more
// than once (spurious retransmissions: the server had the first copy).
// Every existing domain must end LIKELY, every window within bounds and
// idle, and no goroutine left after Close.
func TestDNSPacingHostileResolvers(t *testing.T) {
	if testing.Short() {
		t.Skip("a thousand lookups per case")
	}
	one := func(t *testing.T, srv *dnstest.Server) []string { return []string{srv.Addr()} }
	cases := []paceCase{
		{name: "plain", opts: func() *dnstest.Options { return pacingZone(0) }, servers: one, n: 1000},
		{name: "readbuf4096", opts: func() *dnstest.Options { o := pacingZone(0); o.ReadBuffer = 4096; return o }, servers: one, n: 1000},
		{name: "readbuf4096defaults", opts: func() *dnstest.Options { o := pacingZone(0); o.ReadBuffer = 4096; return o }, servers: one, n: 1000, defaults: true},
		{name: "pending64defaults", opts: func() *dnstest.Options { o := pacingZone(0); o.MaxPending = 64; return o }, servers: one, n: 1000, defaults: true},
		{name: "pending64", opts: func() *dnstest.Options { o := pacingZone(0); o.MaxPending = 64; return o }, servers: one, n: 1000},
		{name: "slownames", opts: func() *dnstest.Options { return pacingZone(1500 * time.Millisecond) }, servers: one, n: 1000, slowShare: true},
		{name: "lossy10", opts: func() *dnstest.Options { return pacingZone(0) }, servers: func(t *testing.T, srv *dnstest.Server) []string {
			p := dnstest.StartProxy(t, srv.Addr())
			p.SetDropEvery(10)
			return []string{p.Addr()}
		}, n: 1000, mayLose: 2},
		{name: "onedead", opts: func() *dnstest.Options { return pacingZone(0) }, servers: func(t *testing.T, srv *dnstest.Server) []string {
			silent, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { silent.Close() })
			return []string{silent.LocalAddr().String(), srv.Addr()}
		}, n: 1000},
		{name: "refusingthenback", opts: func() *dnstest.Options { return pacingZone(0) }, servers: one, n: 1000,
			before: func(srv *dnstest.Server) { srv.SetRefusing(true) },
			during: func(srv *dnstest.Server) { time.Sleep(300 * time.Millisecond); srv.SetRefusing(false) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			goroutines := runtime.NumGoroutine()
			srv := dnstest.Start(t, nil, c.opts())
			cfg := emailcheck.Config{Nameservers: c.servers(t, srv), AllowPrivateMX: true, QueryTimeout: 10 * time.Second}
			if c.defaults {
				cfg.QueryTimeout = 0
			}
			v, err := emailcheck.New(&cfg)
			if err != nil {
				t.Fatal(err)
			}
			if c.before != nil {
				c.before(srv)
			}
			domains := make([]string, c.n)
			emails := make([]string, c.n)
			for i := range emails {
				prefix := "d"
				if c.slowShare && i%10 == 0 {
					prefix = "slow"
				}
				domains[i] = fmt.Sprintf("%s%d.pace", prefix, i)
				emails[i] = "u@" + domains[i]
			}
			if c.during != nil {
				go c.during(srv)
			}
			var notLikely atomic.Int64
			start := time.Now()
			var first []string
			for res, err := range v.ValidateMany(context.Background(), slices.Values(emails), nil) {
				if err != nil || res.Confidence.Status != emailcheck.StatusLikely {
					if notLikely.Add(1) <= 3 {
						first = append(first, fmt.Sprintf("%s: %s %s %v", res.Email, res.Confidence.Status, res.Reason, err))
					}
				}
			}
			took := time.Since(start)
			var dups, fastDups int64
			for i, d := range domains {
				if k := srv.QueryCount(d, dns.TypeMX); k > 1 {
					dups += k - 1
					if !(c.slowShare && i%10 == 0) {
						fastDups += k - 1
					}
				}
			}
			st := v.ResolverStats()
			t.Logf("RESULT %s: %v, %d not LIKELY %v, %d queries, %d dropped by server, %d duplicate MX questions (%d of fast names); stats %+v",
				c.name, took.Round(time.Millisecond), notLikely.Load(), first, srv.Queries(), srv.Dropped(), dups, fastDups, st)
			for _, s := range st {
				if s.InFlight != 0 || s.Waiting != 0 || s.Window > emailcheck.DefaultMaxInFlight || s.Window < 1 {
					t.Errorf("after the burst: %+v", s)
				}
			}
			v.Close()
			srv.Close()
			if notLikely.Load() > c.mayLose {
				t.Errorf("%d existing domains not LIKELY; at most %d may be", notLikely.Load(), c.mayLose)
			}
			deadline := time.Now().Add(time.Minute)
			for runtime.NumGoroutine() > goroutines+2 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if g := runtime.NumGoroutine(); g > goroutines+2 {
				t.Errorf("%d goroutines after Close; %d before", g, goroutines)
			}
		})
	}
}
