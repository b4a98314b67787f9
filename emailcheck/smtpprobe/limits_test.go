package smtpprobe_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/emailcheck/smtpprobe"
)

// countingServer is a scripted mail server listening on one port of
// several loopback addresses. It counts the conversations open at once,
// a conversation ending when the client says QUIT (before the server
// answers, so before the client can free its slot) or goes away. It holds
// its answer to each RCPT until more than limit conversations are open or
// a moment has passed, so that a prober exceeding its limits is caught.
type countingServer struct {
	port  uint16
	limit int32
	open  atomic.Int32
	peak  atomic.Int32
	conns atomic.Int32
}

func startCountingServer(t *testing.T, limit int, ips ...string) *countingServer {
	t.Helper()
	s := &countingServer{limit: int32(limit)}
	for attempt := 0; ; attempt++ {
		lns, err := listenAll(ips)
		if err != nil {
			if attempt < 10 {
				continue // the port was taken on another address
			}
			t.Fatal(err)
		}
		s.port = netip.MustParseAddrPort(lns[0].Addr().String()).Port()
		var wg sync.WaitGroup
		for _, ln := range lns {
			wg.Go(func() { s.serve(ln) })
		}
		t.Cleanup(func() {
			for _, ln := range lns {
				ln.Close()
			}
			wg.Wait()
		})
		return s
	}
}

// listenAll listens on one port of every address in ips.
func listenAll(ips []string) ([]net.Listener, error) {
	first, err := net.Listen("tcp", net.JoinHostPort(ips[0], "0"))
	if err != nil {
		return nil, err
	}
	lns := []net.Listener{first}
	port := netip.MustParseAddrPort(first.Addr().String()).Port()
	for _, ip := range ips[1:] {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, fmt.Sprint(port)))
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, err
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

func (s *countingServer) serve(ln net.Listener) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		wg.Go(func() { s.converse(c) })
	}
}

func (s *countingServer) converse(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	s.conns.Add(1)
	n := s.open.Add(1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	var once sync.Once
	end := func() { once.Do(func() { s.open.Add(-1) }) }
	defer end()
	r := bufio.NewReader(c)
	io.WriteString(c, "220 mx.test ESMTP\r\n")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(line)
		switch {
		case strings.HasPrefix(cmd, "EHLO"):
			io.WriteString(c, "250-mx.test\r\n250 ENHANCEDSTATUSCODES\r\n")
		case strings.HasPrefix(cmd, "RCPT TO:<VM-"):
			io.WriteString(c, "550 5.1.1 no such user\r\n")
		case strings.HasPrefix(cmd, "RCPT"):
			// Give other conversations the time to arrive, or stop
			// waiting as soon as one too many has.
			for deadline := time.Now().Add(20 * time.Millisecond); time.Now().Before(deadline) && s.open.Load() <= s.limit; {
				time.Sleep(time.Millisecond)
			}
			io.WriteString(c, "250 2.1.5 ok\r\n")
		case strings.HasPrefix(cmd, "QUIT"):
			end()
			io.WriteString(c, "221 2.0.0 bye\r\n")
			return
		default:
			io.WriteString(c, "250 2.0.0 ok\r\n")
		}
	}
}

// probeAll validates one address at each domain at once and reports how
// many were found deliverable by a probe.
func probeAll(t *testing.T, v *emailcheck.Validator, domains []string) int {
	t.Helper()
	var wg sync.WaitGroup
	var delivered atomic.Int32
	for _, d := range domains {
		wg.Go(func() {
			res, err := v.Validate(context.Background(), "jane@"+d)
			if err != nil {
				t.Error(err)
				return
			}
			if res.Confidence.Status == emailcheck.StatusDeliverable && res.SMTP.Checked {
				delivered.Add(1)
			} else {
				t.Errorf("jane@%s: %s, smtp %+v", d, res.Confidence.Status, res.SMTP)
			}
		})
	}
	wg.Wait()
	return int(delivered.Load())
}

// 200 domains whose distinct MX host names all point at one address: the
// prober never holds more than the per-address limit open to it.
func TestLimitPerDestinationNotPerName(t *testing.T) {
	t.Parallel()
	srv := startCountingServer(t, smtpprobe.DefaultMaxConnsPerAddr, "127.0.0.1")
	p := newProber(t, srv.port, func(c *smtpprobe.Config) { c.Timeout = 5 * time.Minute })
	domains := make([]string, 200)
	for i := range domains {
		domains[i] = fmt.Sprintf("d%d.shop.io", i) // MX host mx.d<i>.shop.io, at 127.0.0.1
	}
	v := validatorFor(t, p, domains...)
	if n := probeAll(t, v, domains); n != len(domains) {
		t.Fatalf("%d of %d addresses probed", n, len(domains))
	}
	if peak := srv.peak.Load(); peak > smtpprobe.DefaultMaxConnsPerAddr {
		t.Errorf("%d connections open at once to one address, limit %d", peak, smtpprobe.DefaultMaxConnsPerAddr)
	}
	t.Logf("200 MX names at one address: %d connections, at most %d at once", srv.conns.Load(), srv.peak.Load())
}

// Limits per network and across all destinations hold when every MX host
// has an address of its own.
func TestLimitPerNetworkAndOverall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		ip    func(i int) string
		tweak func(*smtpprobe.Config)
		limit int
	}{
		{"one /24", func(i int) string { return fmt.Sprintf("127.0.0.%d", i+1) }, nil, smtpprobe.DefaultMaxConnsPerNet},
		{"overall", func(i int) string { return fmt.Sprintf("127.0.%d.1", i) }, func(c *smtpprobe.Config) { c.MaxConns = 3 }, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			const n = 12
			ips := make([]string, n)
			zone := dnstest.Zone{}
			domains := make([]string, n)
			for i := range n {
				ips[i] = tt.ip(i)
				domains[i] = fmt.Sprintf("d%d.shop.io", i)
				zone[domains[i]] = dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx." + domains[i], Addrs: []string{ips[i]}}}}
			}
			srv := startCountingServer(t, tt.limit, ips...)
			p := newProber(t, srv.port, func(c *smtpprobe.Config) {
				c.Timeout = 5 * time.Minute
				if tt.tweak != nil {
					tt.tweak(c)
				}
			})
			dns := dnstest.Start(t, zone, nil)
			v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{dns.Addr()}, AllowPrivateMX: true, Prober: p})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { v.Close() })
			if got := probeAll(t, v, domains); got != n {
				t.Fatalf("%d of %d addresses probed", got, n)
			}
			if peak := srv.peak.Load(); peak > int32(tt.limit) {
				t.Errorf("%d connections open at once, limit %d", peak, tt.limit)
			}
		})
	}
}

// The prober dials no address that is not public, whatever form carries
// it, unless told to; it dials the IP address it checked, never a name.
func TestRefusesNonPublicDestinations(t *testing.T) {
	t.Parallel()
	for _, a := range []string{
		"127.0.0.1",
		"10.1.2.3",
		"169.254.169.254",
		"100.64.0.1",
		"::1",
		"fd00::25",
		"::ffff:127.0.0.1",
		"::127.0.0.1",
		"64:ff9b::7f00:1",
		"64:ff9b::a01:203",
		"64:ff9b:1::a01:203",
		"2002:7f00:1::1",
		"2002:c0a8:101::1",
		"2001:0:4136:e378:8000:63bf:80ff:fffe",
	} {
		var dialled atomic.Int32
		p, err := smtpprobe.New(smtpprobe.Config{
			HELO: "probe.validmail.test", MailFrom: "bounces@validmail.test",
			Dial: func(context.Context, string, string) (net.Conn, error) {
				dialled.Add(1)
				return nil, errors.New("no network in this test")
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		r := p.ProbeMailbox(context.Background(), request("jane@example.org", map[string]string{"mx.example.org": a}, "mx.example.org"))
		if dialled.Load() != 0 || r.Checked || r.Mailbox != emailcheck.MailboxUnknown {
			t.Errorf("MX at %s: %d dials, %+v; want none, unknown", a, dialled.Load(), r)
		}
	}

	// A public address is dialled as the address itself.
	var target string
	p, err := smtpprobe.New(smtpprobe.Config{
		HELO: "probe.validmail.test", MailFrom: "bounces@validmail.test",
		Dial: func(_ context.Context, _, addr string) (net.Conn, error) {
			target = addr
			return nil, errors.New("no network in this test")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	req := request("jane@example.org", map[string]string{"mx.example.org": "64:ff9b::5db8:d822"}, "mx.example.org")
	p.ProbeMailbox(context.Background(), req)
	if target != "[64:ff9b::5db8:d822]:25" {
		t.Errorf("dialled %q, want [64:ff9b::5db8:d822]:25", target)
	}
}
