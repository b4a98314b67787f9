package smtpprobe_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/emailcheck/smtpprobe"
)

// mailServer is a go-smtp server on loopback whose answer to RCPT TO is
// rcpt's, with a transcript of everything said.
type mailServer struct {
	addr  netip.AddrPort
	conns atomic.Int32 // connections accepted
	open  atomic.Int32 // connections open now
	peak  atomic.Int32 // most connections open at once

	mu         sync.Mutex
	transcript strings.Builder
}

func (m *mailServer) Write(b []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.transcript.Write(b)
}

func (m *mailServer) said() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.transcript.String()
}

// waitIdle waits up to 5 s for every connection to close.
func (m *mailServer) waitIdle() {
	for deadline := time.Now().Add(5 * time.Second); m.open.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
}

type session struct{ rcpt func(to string) error }

func (s *session) Reset()                                    {}
func (s *session) Logout() error                             { return nil }
func (s *session) Mail(string, *smtp.MailOptions) error      { return nil }
func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error { return s.rcpt(to) }
func (s *session) Data(io.Reader) error                      { return errors.New("no data expected") }
func startMailServer(t *testing.T, ip string, rcpt func(to string) error) *mailServer {
	t.Helper()
	m := &mailServer{}
	be := smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		n := m.open.Add(1)
		for {
			p := m.peak.Load()
			if n <= p || m.peak.CompareAndSwap(p, n) {
				break
			}
		}
		m.conns.Add(1)
		return &session{rcpt: rcpt}, nil
	})
	srv := smtp.NewServer(be)
	srv.Domain = "mx.test"
	srv.Debug = m
	srv.EnableSMTPUTF8 = true
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	m.addr = netip.MustParseAddrPort(ln.Addr().String())
	go srv.Serve(&countingListener{Listener: ln, m: m})
	t.Cleanup(func() {
		// Let conversations end (QUIT follows the last answer) before
		// closing: go-smtp's Close races with a connection mid-command.
		m.waitIdle()
		srv.Close()
	})
	return m
}

// countingListener notices connections closing.
type countingListener struct {
	net.Listener
	m *mailServer
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &closeCounter{Conn: c, m: l.m}, nil
}

type closeCounter struct {
	net.Conn
	m    *mailServer
	once sync.Once
}

func (c *closeCounter) Close() error {
	c.once.Do(func() { c.m.open.Add(-1) })
	return c.Conn.Close()
}

func reject(code int, ec smtp.EnhancedCode, msg string) error {
	return &smtp.SMTPError{Code: code, EnhancedCode: ec, Message: msg}
}

// newProber returns a prober on port, and a request for address whose MX
// hosts resolve by hosts.
func newProber(t *testing.T, port uint16, tweak func(*smtpprobe.Config)) *smtpprobe.Prober {
	t.Helper()
	cfg := smtpprobe.Config{HELO: "probe.validmail.test", MailFrom: "bounces@validmail.test", Port: int(port), Timeout: 3 * time.Second, ConnsPerSecond: -1, AllowPrivate: true}
	if tweak != nil {
		tweak(&cfg)
	}
	p, err := smtpprobe.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func request(address string, hosts map[string]string, order ...string) emailcheck.ProbeRequest {
	_, domain, _ := strings.Cut(address, "@")
	return emailcheck.ProbeRequest{
		Address: address,
		Domain:  domain,
		MXHosts: order,
		LookupHost: func(_ context.Context, host string) ([]netip.Addr, error) {
			if a, ok := hosts[host]; ok {
				return []netip.Addr{netip.MustParseAddr(a)}, nil
			}
			return nil, nil
		},
	}
}

func code(r emailcheck.SMTPResult) string {
	c, ec := "-", "-"
	if r.Code != nil {
		c = strconv.Itoa(*r.Code)
	}
	if r.EnhancedCode != nil {
		ec = *r.EnhancedCode
	}
	return c + " " + ec
}

func catchAll(r emailcheck.SMTPResult) string {
	if r.CatchAll == nil {
		return "?"
	}
	return strconv.FormatBool(*r.CatchAll)
}

func TestReplies(t *testing.T) {
	t.Parallel()
	exists := "exists"
	tests := []struct {
		name     string
		rcpt     func(to string) error
		mailbox  emailcheck.MailboxState
		catchAll string
		code     string
	}{
		{"accepted", func(to string) error {
			if strings.HasPrefix(to, "vm-") {
				return reject(550, smtp.EnhancedCode{5, 1, 1}, "No such user")
			}
			return nil
		}, emailcheck.MailboxExists, "false", "250 -"},
		{"550 5.1.1", func(string) error { return reject(550, smtp.EnhancedCode{5, 1, 1}, "User unknown") }, emailcheck.MailboxAbsent, "?", "550 5.1.1"},
		{"multi-line 550-5.1.1", func(string) error {
			return reject(550, smtp.EnhancedCode{5, 1, 1}, "The email account that you tried to reach does not exist.\nPlease try double-checking the recipient's email\naddress for typos.")
		}, emailcheck.MailboxAbsent, "?", "550 5.1.1"},
		{"M365 5.4.1", func(string) error {
			return reject(550, smtp.EnhancedCode{5, 4, 1}, "Recipient address rejected: Access denied.")
		}, emailcheck.MailboxAbsent, "?", "550 5.4.1"},
		{"5.2.1 disabled", func(string) error { return reject(550, smtp.EnhancedCode{5, 2, 1}, "Mailbox disabled") }, emailcheck.MailboxAbsent, "?", "550 5.2.1"},
		{"catch-all", func(string) error { return nil }, emailcheck.MailboxExists, "true", "250 -"},
		{"greylisting 451 4.7.1", func(string) error { return reject(451, smtp.EnhancedCode{4, 7, 1}, "Greylisted, try again later") }, emailcheck.MailboxUnknown, "?", "451 4.7.1"},
		{"452 mailbox full", func(string) error { return reject(452, smtp.EnhancedCode{4, 2, 2}, "Mailbox full") }, emailcheck.MailboxUnknown, "?", "452 4.2.2"},
		{"5.7.1 block", func(string) error { return reject(550, smtp.EnhancedCode{5, 7, 1}, "Client host blocked") }, emailcheck.MailboxUnknown, "?", "550 5.7.1"},
		{"550 without an enhanced code", func(string) error { return reject(550, smtp.NoEnhancedCode, "Rejected") }, emailcheck.MailboxUnknown, "?", "550 -"},
	}
	_ = exists
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := startMailServer(t, "127.0.0.1", tt.rcpt)
			p := newProber(t, srv.addr.Port(), nil)
			r := p.ProbeMailbox(context.Background(), request("jane@example.org", map[string]string{"mx.example.org": "127.0.0.1"}, "mx.example.org"))
			if r.Mailbox != tt.mailbox || catchAll(r) != tt.catchAll || code(r) != tt.code || !r.Checked {
				t.Errorf("mailbox %s, catch_all %s, code %s, checked %v (%s); want %s, %s, %s, true",
					r.Mailbox, catchAll(r), code(r), r.Checked, r.Detail, tt.mailbox, tt.catchAll, tt.code)
			}
			// QUIT comes after the answer: wait for the connection to end.
			srv.waitIdle()
			said := srv.said()
			for _, want := range []string{"EHLO probe.validmail.test", "MAIL FROM:<bounces@validmail.test>", "RCPT TO:<jane@example.org>", "QUIT"} {
				if !strings.Contains(said, want) {
					t.Errorf("the server never heard %q:\n%s", want, said)
				}
			}
			for _, never := range []string{"DATA", "VRFY"} {
				if strings.Contains(said, "\n"+never) || strings.HasPrefix(said, never) {
					t.Errorf("the server heard %s:\n%s", never, said)
				}
			}
		})
	}
}

// Gmail's multi-line refusal carries the enhanced code on every line.
func TestMultiLineRefusal(t *testing.T) {
	t.Parallel()
	port := rawServer(t, func(c net.Conn, r *bufio.Reader) {
		io.WriteString(c, "220 mx.google.test ESMTP\r\n")
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			switch {
			case strings.HasPrefix(line, "EHLO"):
				io.WriteString(c, "250-mx.google.test at your service\r\n250-SIZE 157286400\r\n250 ENHANCEDSTATUSCODES\r\n")
			case strings.HasPrefix(line, "RCPT"):
				io.WriteString(c, "550-5.1.1 The email account that you tried to reach does not exist. Please try\r\n"+
					"550-5.1.1 double-checking the recipient's email address for typos or\r\n"+
					"550 5.1.1 unnecessary spaces. For more information, go to the help center.\r\n")
			case strings.HasPrefix(line, "QUIT"):
				io.WriteString(c, "221 2.0.0 closing connection\r\n")
				return
			default:
				io.WriteString(c, "250 2.1.0 OK\r\n")
			}
		}
	})
	p := newProber(t, port, nil)
	r := p.ProbeMailbox(context.Background(), request("jane@example.org", map[string]string{"mx.example.org": "127.0.0.1"}, "mx.example.org"))
	if r.Mailbox != emailcheck.MailboxAbsent || code(r) != "550 5.1.1" {
		t.Fatalf("mailbox %s, code %s (%s); want absent, 550 5.1.1", r.Mailbox, code(r), r.Detail)
	}
}

// The catch-all verdict is cached per domain: the random address is asked
// once.
func TestCatchAllCached(t *testing.T) {
	t.Parallel()
	var randoms atomic.Int32
	srv := startMailServer(t, "127.0.0.1", func(to string) error {
		if strings.HasPrefix(to, "vm-") {
			randoms.Add(1)
		}
		return nil
	})
	p := newProber(t, srv.addr.Port(), nil)
	hosts := map[string]string{"mx.example.org": "127.0.0.1"}
	for i := range 3 {
		r := p.ProbeMailbox(context.Background(), request(fmt.Sprintf("u%d@example.org", i), hosts, "mx.example.org"))
		if catchAll(r) != "true" {
			t.Fatalf("probe %d: catch_all %s", i, catchAll(r))
		}
	}
	if n := randoms.Load(); n != 1 {
		t.Errorf("the random address was asked %d times, want 1", n)
	}
}

// rawServer answers each connection with script.
func rawServer(t *testing.T, script func(c net.Conn, r *bufio.Reader)) uint16 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				script(c, bufio.NewReader(c))
			}()
		}
	}()
	return netip.MustParseAddrPort(ln.Addr().String()).Port()
}

func TestBannersAndBrokenServers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script func(c net.Conn, r *bufio.Reader)
		code   string
	}{
		{"554 banner", func(c net.Conn, _ *bufio.Reader) { io.WriteString(c, "554 5.7.1 No SMTP service here\r\n") }, "554 5.7.1"},
		{"421 banner", func(c net.Conn, _ *bufio.Reader) { io.WriteString(c, "421 4.3.2 Service not available\r\n") }, "421 4.3.2"},
		{"silent banner", func(c net.Conn, _ *bufio.Reader) { time.Sleep(2 * time.Second) }, "- -"},
		{"5xx to EHLO", func(c net.Conn, r *bufio.Reader) {
			io.WriteString(c, "220 mx.test ESMTP\r\n")
			r.ReadString('\n')
			io.WriteString(c, "550 5.7.1 Your HELO is not welcome\r\n")
		}, "550 5.7.1"},
		{"5xx to MAIL FROM", func(c net.Conn, r *bufio.Reader) {
			io.WriteString(c, "220 mx.test ESMTP\r\n")
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				switch {
				case strings.HasPrefix(line, "EHLO"):
					io.WriteString(c, "250-mx.test\r\n250 8BITMIME\r\n")
				case strings.HasPrefix(line, "MAIL"):
					io.WriteString(c, "553 5.1.8 Sender domain does not exist\r\n")
				default:
					io.WriteString(c, "250 ok\r\n")
				}
			}
		}, "553 5.1.8"},
		{"reset mid-conversation", func(c net.Conn, r *bufio.Reader) {
			io.WriteString(c, "220 mx.test ESMTP\r\n")
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if strings.HasPrefix(line, "RCPT") {
					if tc, ok := c.(*net.TCPConn); ok {
						tc.SetLinger(0)
					}
					return
				}
				io.WriteString(c, "250 ok\r\n")
			}
		}, "- -"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			port := rawServer(t, tt.script)
			p := newProber(t, port, func(c *smtpprobe.Config) { c.Timeout = time.Second })
			r := p.ProbeMailbox(context.Background(), request("jane@example.org", map[string]string{"mx.example.org": "127.0.0.1"}, "mx.example.org"))
			if r.Mailbox != emailcheck.MailboxUnknown || code(r) != tt.code {
				t.Errorf("mailbox %s, code %s (%s); want unknown, %s", r.Mailbox, code(r), r.Detail, tt.code)
			}
		})
	}
}

// The first MX host does not answer; the second does.
func TestNextMXOnFailure(t *testing.T) {
	t.Parallel()
	srv := startMailServer(t, "127.0.0.1", func(string) error { return reject(550, smtp.EnhancedCode{5, 1, 1}, "unknown") })
	p := newProber(t, srv.addr.Port(), nil)
	// Nothing listens on 127.0.0.2 at that port.
	r := p.ProbeMailbox(context.Background(), request("jane@example.org",
		map[string]string{"mx1.example.org": "127.0.0.2", "mx2.example.org": "127.0.0.1"}, "mx1.example.org", "mx2.example.org"))
	if r.Mailbox != emailcheck.MailboxAbsent {
		t.Fatalf("mailbox %s (%s), want absent from the second MX", r.Mailbox, r.Detail)
	}
}

// 200 probes of one domain at once share few connections, never more than
// the per-host limit.
func TestConnectionLimit(t *testing.T) {
	t.Parallel()
	srv := startMailServer(t, "127.0.0.1", func(to string) error {
		time.Sleep(time.Millisecond)
		if strings.HasPrefix(to, "vm-") {
			return reject(550, smtp.EnhancedCode{5, 1, 1}, "unknown")
		}
		return nil
	})
	p := newProber(t, srv.addr.Port(), func(c *smtpprobe.Config) { c.Timeout = 20 * time.Second })
	hosts := map[string]string{"mx.example.org": "127.0.0.1"}
	var wg sync.WaitGroup
	var exists atomic.Int32
	for i := range 200 {
		wg.Go(func() {
			r := p.ProbeMailbox(context.Background(), request(fmt.Sprintf("u%d@example.org", i), hosts, "mx.example.org"))
			if r.Mailbox == emailcheck.MailboxExists {
				exists.Add(1)
			}
		})
	}
	wg.Wait()
	if exists.Load() != 200 {
		t.Errorf("%d of 200 probes found the mailbox", exists.Load())
	}
	if peak := srv.peak.Load(); peak > smtpprobe.DefaultMaxConnsPerAddr {
		t.Errorf("%d connections open at once, limit %d", peak, smtpprobe.DefaultMaxConnsPerAddr)
	}
	t.Logf("200 probes of one domain: %d connections", srv.conns.Load())
}

// Cancelling the caller's context ends the conversation at once.
func TestCancelEndsPromptly(t *testing.T) {
	t.Parallel()
	port := rawServer(t, func(c net.Conn, r *bufio.Reader) {
		io.WriteString(c, "220 mx.test ESMTP\r\n")
		r.ReadString('\n')
		time.Sleep(5 * time.Second) // never answers EHLO
	})
	p := newProber(t, port, func(c *smtpprobe.Config) { c.Timeout = 10 * time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	r := p.ProbeMailbox(ctx, request("jane@example.org", map[string]string{"mx.example.org": "127.0.0.1"}, "mx.example.org"))
	if d := time.Since(start); d > time.Second || r.Mailbox != emailcheck.MailboxUnknown {
		t.Fatalf("after %v: %s (%s); want unknown within about 200ms", d, r.Mailbox, r.Detail)
	}
}

func TestNewRequiresIdentity(t *testing.T) {
	t.Parallel()
	for _, cfg := range []smtpprobe.Config{
		{MailFrom: "bounces@validmail.test"},
		{HELO: "probe.validmail.test"},
		{HELO: "probe validmail", MailFrom: "bounces@validmail.test"},
		{HELO: "probe.validmail.test", MailFrom: "not an address"},
	} {
		if _, err := smtpprobe.New(cfg); !errors.Is(err, emailcheck.ErrConfig) {
			t.Errorf("New(%+v): %v, want ErrConfig", cfg, err)
		}
	}
}

// validatorFor returns a validator whose MX hosts are on loopback and
// that probes them with p.
func validatorFor(t testing.TB, p emailcheck.MailboxProber, domains ...string) *emailcheck.Validator {
	t.Helper()
	zone := dnstest.Zone{"mailinator.com": {MX: []dnstest.MX{{Pref: 10, Host: "mail.mailinator.com", Addrs: []string{"127.0.0.1"}}}}}
	for _, d := range domains {
		zone[d] = dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx." + d, Addrs: []string{"127.0.0.1"}}}}
	}
	srv := dnstest.Start(t, zone, nil)
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, AllowPrivateMX: true, Prober: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

func TestValidatorStatuses(t *testing.T) {
	t.Parallel()
	srv := startMailServer(t, "127.0.0.1", func(to string) error {
		local, domain, _ := strings.Cut(to, "@")
		switch {
		case domain == "catchall.io":
			return nil
		case local == "gone":
			return reject(550, smtp.EnhancedCode{5, 1, 1}, "no such user")
		case local == "grey":
			return reject(451, smtp.EnhancedCode{4, 7, 1}, "greylisted")
		case strings.HasPrefix(local, "vm-"):
			return reject(550, smtp.EnhancedCode{5, 1, 1}, "no such user")
		}
		return nil
	})
	v := validatorFor(t, newProber(t, srv.addr.Port(), nil), "shop.io", "catchall.io", "xn--bcher-kva.io")
	tests := []struct {
		email  string
		status emailcheck.Status
		score  int
		probed bool
	}{
		{"jane@shop.io", emailcheck.StatusDeliverable, 100, true},
		{"gone@shop.io", emailcheck.StatusUndeliverable, 5, true},
		{"grey@shop.io", emailcheck.StatusLikely, 90, true},
		{"jane@catchall.io", emailcheck.StatusCatchAll, 80, true},
		{"jane@bücher.io", emailcheck.StatusDeliverable, 100, true},
		{"jane@mailinator.com", emailcheck.StatusDisposable, 20, false},
		{"not an address", emailcheck.StatusInvalidFormat, 0, false},
	}
	for _, tt := range tests {
		res, err := v.Validate(context.Background(), tt.email)
		if err != nil {
			t.Fatal(err)
		}
		if res.Confidence.Status != tt.status || res.Confidence.Score != tt.score || res.SMTP == nil || res.SMTP.Checked != tt.probed {
			t.Errorf("%s: %s %d, smtp %+v; want %s %d, checked %v", tt.email, res.Confidence.Status, res.Confidence.Score, res.SMTP, tt.status, tt.score, tt.probed)
		}
	}
	srv.waitIdle()
	said := srv.said()
	if !strings.Contains(said, "RCPT TO:<jane@xn--bcher-kva.io>") {
		t.Errorf("the IDN domain was not asked in A-label form:\n%s", said)
	}
	if strings.Contains(said, "mailinator") {
		t.Errorf("a disposable domain was probed:\n%s", said)
	}
}

// Without a prober the result has no smtp object at all.
func TestNoProberNoSMTPField(t *testing.T) {
	t.Parallel()
	v := validatorFor(t, nil, "shop.io")
	res, err := v.Validate(context.Background(), "jane@shop.io")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	if res.SMTP != nil || strings.Contains(string(b), `"smtp"`) {
		t.Fatalf("smtp present without a prober: %s", b)
	}
}

// BenchmarkBatch1000Over50Domains probes 1,000 addresses at 50 domains
// through the validator, on loopback, and reports the connections opened:
// the domains on 50 mail servers (addresses in distinct /24s), or all on
// one, where the per-address limit holds the prober to 2 connections.
func BenchmarkBatch1000Over50Domains(b *testing.B) {
	for _, servers := range []int{50, 1} {
		b.Run(fmt.Sprintf("servers=%d", servers), func(b *testing.B) { benchBatch(b, servers) })
	}
}

func benchBatch(b *testing.B, servers int) {
	var conns atomic.Int32
	be := smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		conns.Add(1)
		return &session{rcpt: func(to string) error {
			if strings.HasPrefix(to, "vm-") {
				return reject(550, smtp.EnhancedCode{5, 1, 1}, "unknown")
			}
			return nil
		}}, nil
	})
	srv := smtp.NewServer(be)
	srv.Domain = "mx.test"
	ips := make([]string, servers)
	for i := range ips {
		ips[i] = fmt.Sprintf("127.0.%d.1", i)
	}
	var lns []net.Listener
	var err error
	for range 10 {
		if lns, err = listenAll(ips); err == nil {
			break
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	for _, ln := range lns {
		go srv.Serve(ln)
	}
	defer srv.Close()
	zone := dnstest.Zone{}
	domains := make([]string, 50)
	for i := range domains {
		domains[i] = fmt.Sprintf("d%d.shop.io", i)
		zone[domains[i]] = dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx." + domains[i], Addrs: []string{ips[i%servers]}}}}
	}
	dns := dnstest.Start(b, zone, nil)
	emails := make([]string, 1000)
	for i := range emails {
		emails[i] = fmt.Sprintf("user%d@%s", i, domains[i%50])
	}
	port := netip.MustParseAddrPort(lns[0].Addr().String()).Port()
	for b.Loop() {
		b.StopTimer()
		conns.Store(0)
		p, err := smtpprobe.New(smtpprobe.Config{HELO: "probe.validmail.test", MailFrom: "bounces@validmail.test", Port: int(port), ConnsPerSecond: -1, AllowPrivate: true})
		if err != nil {
			b.Fatal(err)
		}
		v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{dns.Addr()}, AllowPrivateMX: true, Prober: p})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for res, err := range v.ValidateMany(context.Background(), slices.Values(emails), nil) {
			if err != nil || res.Confidence.Status != emailcheck.StatusDeliverable {
				b.Fatalf("%s: %s %v", res.Email, res.Confidence.Status, err)
			}
		}
		b.StopTimer()
		v.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(conns.Load()), "conns/op")
}

// selfSigned returns a TLS configuration with a fresh self-signed
// certificate, as many mail servers have.
func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "mx.test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		DNSNames:     []string{"mx.test"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

// A server that offers STARTTLS is spoken to over TLS, with the EHLO said
// again after the upgrade.
func TestSTARTTLS(t *testing.T) {
	t.Parallel()
	var overTLS atomic.Bool
	var m *mailServer
	be := smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		m.open.Add(1)
		return &session{rcpt: func(to string) error {
			if _, ok := c.TLSConnectionState(); ok {
				overTLS.Store(true)
			}
			if strings.HasPrefix(to, "vm-") {
				return reject(550, smtp.EnhancedCode{5, 1, 1}, "unknown")
			}
			return nil
		}}, nil
	})
	srv := smtp.NewServer(be)
	srv.Domain = "mx.test"
	srv.TLSConfig = selfSigned(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m = &mailServer{}
	go srv.Serve(&countingListener{Listener: ln, m: m})
	defer func() { m.waitIdle(); srv.Close() }()
	p := newProber(t, netip.MustParseAddrPort(ln.Addr().String()).Port(), nil)
	r := p.ProbeMailbox(context.Background(), request("jane@example.org", map[string]string{"mx.example.org": "127.0.0.1"}, "mx.example.org"))
	if r.Mailbox != emailcheck.MailboxExists || catchAll(r) != "false" {
		t.Fatalf("mailbox %s, catch_all %s (%s)", r.Mailbox, catchAll(r), r.Detail)
	}
	if !overTLS.Load() {
		t.Fatal("the recipient was named in clear text though the server offered STARTTLS")
	}
}
