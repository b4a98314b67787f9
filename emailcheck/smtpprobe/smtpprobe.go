// Package smtpprobe asks a domain's mail servers whether a mailbox exists,
// the way a sending server would, and stops before sending anything: an
// [emailcheck.MailboxProber] on github.com/emersion/go-smtp's client.
//
// # The conversation
//
// The most preferred MX host that has an address is tried first, the next
// ones only when it cannot be reached or answers with a temporary failure
// before the recipient is named. On a connection the prober reads the
// banner, says EHLO with [Config.HELO], upgrades to TLS with STARTTLS when
// the server offers it, says EHLO again, and then, for each address,
// MAIL FROM:<[Config.MailFrom]>, RCPT TO:<address> and, when the address
// was accepted and the domain's catch-all status is not cached, RCPT TO a
// random local part at the same domain; then RSET. It never sends DATA or
// VRFY, and ends with QUIT.
//
// TLS is opportunistic, as between mail servers (RFC 3207, RFC 7435): the
// server's certificate is not verified. When the server refuses STARTTLS
// the conversation goes on in clear text; when the TLS handshake fails,
// the prober reconnects once and converses in clear text. Both are the
// documented ways STARTTLS fails between MTAs, and a probe carries no
// message.
//
// # Being a good citizen
//
// The prober connects only to public addresses ([netpolicy.IsPublic]; all
// of them with [Config.AllowPrivate]), and dials the address it checked,
// never a name, with the rule checked again just before the connection
// is made. Limits are kept per destination, not per MX host name, since
// any number of names may point at one server: at most
// [Config.MaxConnsPerAddr] connections to one address at once (2 by
// default; an IPv6 form carrying an IPv4 address counts as that address),
// [Config.MaxConnsPerNet] to one /24 (IPv4) or /64 (IPv6) network (4), and
// [Config.ConnsPerSecond] new ones a second to one network (5); and
// [Config.MaxConns] connections, hence probes in flight, across all
// destinations (64). Probes of one domain that arrive while a
// conversation is open are asked on that conversation, one after the
// other, so a batch of many addresses at a few domains opens few
// connections. A domain's catch-all verdict is cached for
// [Config.CatchAllTTL].
//
// # Reading the replies
//
// 250 and 251 to RCPT: the mailbox exists. 550, 551 or 553 with the
// enhanced code 5.1.1, 5.1.10 or 5.2.1, or Microsoft 365's 5.4.1: it does
// not. Everything else says nothing about the mailbox and is reported as
// unknown: any 4xx (greylisting, throttling, a full mailbox), a 5.7.x
// policy block, a 5xx to EHLO or MAIL FROM, a 421 or 554 banner, a silent
// server, a reset connection. Multi-line replies are read whole.
package smtpprobe

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/netpolicy"
)

var _ emailcheck.MailboxProber = (*Prober)(nil)

// Defaults for the zero fields of [Config].
const (
	DefaultPort            = 25
	DefaultTimeout         = 15 * time.Second
	DefaultMaxConnsPerAddr = 2
	DefaultMaxConnsPerNet  = 4
	DefaultMaxConns        = 64
	DefaultConnsPerSecond  = 5
	DefaultCatchAllTTL     = 6 * time.Hour
	// MaxProbesPerConn bounds the addresses asked on one connection;
	// servers tire of long conversations.
	MaxProbesPerConn = 50
)

// Errors.
var (
	// ErrAddressNotAllowed reports a connection refused because its
	// address is not public ([netpolicy.IsPublic]) and
	// [Config.AllowPrivate] is off.
	ErrAddressNotAllowed = errors.New("smtpprobe: address not allowed")
)

// Config configures a [Prober]. HELO and MailFrom are required: a prober
// must introduce itself with a name and a sender its operator owns.
type Config struct {
	// HELO is the host name said in EHLO: a name of the operator's,
	// ideally the probing host's reverse-DNS name. Required.
	HELO string
	// MailFrom is the sender of MAIL FROM, an address of the operator's
	// that can receive the bounces no probe causes. Required.
	MailFrom string
	// Port is the SMTP port of the MX hosts. Default 25.
	Port int
	// Timeout bounds one probe, from waiting for a connection slot to the
	// answer. Default [DefaultTimeout].
	Timeout time.Duration
	// MaxConnsPerAddr bounds the connections open to one destination
	// address at once, whatever MX host names point at it; an IPv6
	// address carrying an IPv4 address ([netpolicy.Destination]) counts
	// as that address. Default [DefaultMaxConnsPerAddr].
	MaxConnsPerAddr int
	// MaxConnsPerNet bounds the connections open to one network at once:
	// a /24 for IPv4, a /64 for IPv6 ([netpolicy.Network]). Default
	// [DefaultMaxConnsPerNet].
	MaxConnsPerNet int
	// MaxConns bounds the connections open at once across all
	// destinations, and so the probes in flight. Default
	// [DefaultMaxConns].
	MaxConns int
	// ConnsPerSecond bounds the new connections to one network (as
	// MaxConnsPerNet) per second. Default [DefaultConnsPerSecond];
	// negative means no bound.
	ConnsPerSecond float64
	// AllowPrivate lets the prober connect to addresses that are not
	// public (loopback, private, ...), for intranets and tests; it goes
	// with the validator's [emailcheck.Config.AllowPrivateMX]. Default
	// false: such addresses are never dialled.
	AllowPrivate bool
	// CatchAllTTL is how long a domain's catch-all verdict is kept.
	// Default [DefaultCatchAllTTL].
	CatchAllTTL time.Duration
	// Dial opens connections; addr is always an IP address and port that
	// passed the address rule. Default: a net.Dialer that checks the rule
	// again just before connecting.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logger receives a debug record per conversation. Default: discard.
	Logger *slog.Logger
}

// Prober probes mailboxes over SMTP. It is safe for concurrent use.
type Prober struct {
	cfg    Config
	logger *slog.Logger

	all chan struct{} // a token per connection open, across destinations

	mu       sync.Mutex
	addrs    gates[netip.Addr]        // destination address → its limits
	nets     gates[netip.Prefix]      // destination network → its limits
	sessions map[string]*session      // domain → the conversation open for it
	catchAll map[string]catchAllEntry // domain → cached verdict
}

type catchAllEntry struct {
	value   bool
	expires time.Time
}

// gate limits the connections to one destination address or network.
type gate struct {
	slots chan struct{}
	refs  int // connections holding or waiting for it; guarded by Prober.mu

	mu   sync.Mutex
	next time.Time // earliest start of the next connection
}

// New returns a Prober configured by cfg.
func New(cfg Config) (*Prober, error) {
	if strings.TrimSpace(cfg.HELO) == "" || strings.ContainsAny(cfg.HELO, " \r\n") {
		return nil, fmt.Errorf("smtpprobe: %w: HELO must be a host name of the operator's", emailcheck.ErrConfig)
	}
	if at := strings.LastIndexByte(cfg.MailFrom, '@'); at < 1 || at == len(cfg.MailFrom)-1 || strings.ContainsAny(cfg.MailFrom, " <>\r\n") {
		return nil, fmt.Errorf("smtpprobe: %w: MailFrom must be an address of the operator's", emailcheck.ErrConfig)
	}
	cfg.Port = cmp.Or(cfg.Port, DefaultPort)
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	cfg.MaxConnsPerAddr = cmp.Or(cfg.MaxConnsPerAddr, DefaultMaxConnsPerAddr)
	cfg.MaxConnsPerNet = cmp.Or(cfg.MaxConnsPerNet, DefaultMaxConnsPerNet)
	cfg.MaxConns = cmp.Or(cfg.MaxConns, DefaultMaxConns)
	cfg.ConnsPerSecond = cmp.Or(cfg.ConnsPerSecond, DefaultConnsPerSecond)
	cfg.CatchAllTTL = cmp.Or(cfg.CatchAllTTL, DefaultCatchAllTTL)
	if cfg.Port < 1 || cfg.Port > 65535 || cfg.Timeout < 0 || cfg.MaxConnsPerAddr < 1 || cfg.MaxConnsPerNet < 1 || cfg.MaxConns < 1 {
		return nil, fmt.Errorf("smtpprobe: %w: port %d, timeout %v, %d connections per address, %d per network, %d in all",
			emailcheck.ErrConfig, cfg.Port, cfg.Timeout, cfg.MaxConnsPerAddr, cfg.MaxConnsPerNet, cfg.MaxConns)
	}
	p := &Prober{
		cfg:      cfg,
		logger:   cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
		all:      make(chan struct{}, cfg.MaxConns),
		sessions: make(map[string]*session),
		catchAll: make(map[string]catchAllEntry),
	}
	if p.cfg.Dial == nil {
		d := &net.Dialer{ControlContext: p.control}
		p.cfg.Dial = d.DialContext
	}
	return p, nil
}

// allowed reports whether the prober may connect to addr.
func (p *Prober) allowed(addr netip.Addr) bool {
	return p.cfg.AllowPrivate || netpolicy.IsPublic(addr)
}

// control runs just before each connection of the default dialer: the
// address it sees is the one connected to, checked once more.
func (p *Prober) control(_ context.Context, network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return fmt.Errorf("%w: network %s", ErrAddressNotAllowed, network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !p.allowed(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrAddressNotAllowed, address)
	}
	return nil
}

// job is one address waiting for its answer in a session.
type job struct {
	ctx     context.Context
	address string
	utf8    bool
	done    chan emailcheck.SMTPResult
}

// session is the conversation about one domain: the prober that opened it
// asks the queued addresses on it until none is left.
type session struct {
	req  emailcheck.ProbeRequest
	jobs []*job
}

// ProbeMailbox implements [emailcheck.MailboxProber]. A probe of a domain
// that already has a conversation open joins it.
func (p *Prober) ProbeMailbox(ctx context.Context, req emailcheck.ProbeRequest) emailcheck.SMTPResult {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	j := &job{ctx: ctx, address: req.Address, utf8: req.UTF8, done: make(chan emailcheck.SMTPResult, 1)}
	p.mu.Lock()
	if s, ok := p.sessions[req.Domain]; ok {
		s.jobs = append(s.jobs, j)
		p.mu.Unlock()
	} else {
		s := &session{req: req, jobs: []*job{j}}
		p.sessions[req.Domain] = s
		p.mu.Unlock()
		go p.run(context.WithoutCancel(ctx), s)
	}
	select {
	case r := <-j.done:
		return r
	case <-ctx.Done():
		return unknown(0, "", "no answer within the probe's time: "+ctx.Err().Error())
	}
}

// take removes and returns the next job of s, or nil after closing s
// when none is left.
func (p *Prober) take(s *session) *job {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(s.jobs) > 0 {
		j := s.jobs[0]
		s.jobs = s.jobs[1:]
		if j.ctx.Err() == nil {
			return j
		}
		j.done <- unknown(0, "", "no answer within the probe's time")
	}
	delete(p.sessions, s.req.Domain)
	return nil
}

// finishAll answers every job left in s with r and closes s.
func (p *Prober) finishAll(s *session, first *job, r emailcheck.SMTPResult) {
	if first != nil {
		first.done <- r
	}
	for j := p.take(s); j != nil; j = p.take(s) {
		j.done <- r
	}
}

// run holds the conversation for session s: MX hosts in order until one
// takes the questions, then every queued address on it.
func (p *Prober) run(ctx context.Context, s *session) {
	j := p.take(s)
	if j == nil {
		return
	}
	last := unknown(0, "", "no MX host could be reached")
	for _, host := range s.req.MXHosts {
		addrs, err := s.req.LookupHost(j.ctx, host)
		if err != nil {
			continue
		}
		i := slices.IndexFunc(addrs, p.allowed)
		if i < 0 {
			if len(addrs) > 0 {
				last = unknown(0, "", "no MX host has a public address")
			}
			continue
		}
		for {
			var next step
			j, last, next = p.converse(ctx, s, host, addrs[i], j)
			switch next {
			case stepDone:
				return
			case stepAgain:
				continue
			}
			break
		}
	}
	p.finishAll(s, j, last)
}

// step is what run does after a conversation.
type step uint8

const (
	stepDone  step = iota // every job is answered
	stepNext              // try the next MX host
	stepAgain             // reconnect to the same host for the jobs left
)

// converse talks to one MX host about j and the jobs queued after it. It
// reports whether the next MX host should be tried (the host could not be
// reached or refused us before any recipient was named), with the job
// still unanswered and the result to give if no host answers.
func (p *Prober) converse(ctx context.Context, s *session, host string, addr netip.Addr, j *job) (*job, emailcheck.SMTPResult, step) {
	release, err := p.acquire(j.ctx, addr)
	if err != nil {
		return j, unknown(0, "", "no connection slot within the probe's time"), stepNext
	}
	defer release()

	// The address checked is the address dialled: no name is resolved
	// between the check and the connection.
	if !p.allowed(addr) {
		return j, unknown(0, "", "no MX host has a public address"), stepNext
	}
	target := net.JoinHostPort(addr.String(), strconv.Itoa(p.cfg.Port))
	c, r, ok := p.open(j.ctx, target, host, true)
	if !ok {
		return j, r, stepNext
	}
	defer c.close()
	p.logger.DebugContext(ctx, "smtpprobe: conversation", "host", host, "addr", target, "domain", s.req.Domain)

	for n := 0; j != nil; n++ {
		if n == MaxProbesPerConn {
			// Start afresh: the rest of the queue goes on a new connection.
			c.quit()
			return j, emailcheck.SMTPResult{}, stepAgain
		}
		res, alive := p.ask(c, s.req.Domain, j)
		j.done <- res
		if !alive {
			// The connection broke: answer the rest as unknown rather than
			// hammer the host.
			p.finishAll(s, nil, unknown(0, "", "the server ended the conversation"))
			return nil, res, stepDone
		}
		j = p.take(s)
	}
	c.quit()
	return nil, emailcheck.SMTPResult{}, stepDone
}

// acquire waits until a connection to addr is within every limit: a slot
// of its address, then of its network, then of the prober as a whole
// (always in that order, so that waiters never hold what others need to
// finish), then its turn in the network's rate. The returned release
// gives them back once the connection is closed.
func (p *Prober) acquire(ctx context.Context, addr netip.Addr) (release func(), err error) {
	dest := netpolicy.Destination(addr)
	network := netpolicy.Network(addr)
	p.mu.Lock()
	ag := p.addrs.ref(dest, p.cfg.MaxConnsPerAddr)
	ng := p.nets.ref(network, p.cfg.MaxConnsPerNet)
	p.mu.Unlock()

	var held []chan struct{}
	release = func() {
		for i := len(held) - 1; i >= 0; i-- {
			<-held[i]
		}
		p.mu.Lock()
		p.addrs.unref(dest, ag)
		p.nets.unref(network, ng)
		p.mu.Unlock()
	}
	for _, slots := range []chan struct{}{ag.slots, ng.slots, p.all} {
		select {
		case slots <- struct{}{}:
			held = append(held, slots)
		case <-ctx.Done():
			release()
			return nil, ctx.Err()
		}
	}
	if err := ng.wait(ctx, p.cfg.ConnsPerSecond); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// gates holds the gates of destinations that have connections open or
// waiting, or whose rate still holds the next one back. Its methods are
// called with Prober.mu held.
type gates[K comparable] struct {
	m       map[K]*gate
	sweepAt int // the size at which gates left for their rate are swept
}

// ref returns the gate of key, made with n slots if there is none, and
// counts one more user of it.
func (gs *gates[K]) ref(key K, n int) *gate {
	if gs.m == nil {
		gs.m = make(map[K]*gate)
	}
	g, ok := gs.m[key]
	if !ok {
		g = &gate{slots: make(chan struct{}, n)}
		gs.m[key] = g
	}
	g.refs++
	return g
}

// unref counts one user of g fewer, and forgets g once it has none and
// its rate no longer holds anything back: destinations come and go, the
// map stays small. A gate left for its rate is swept once the map has
// doubled since the last sweep.
func (gs *gates[K]) unref(key K, g *gate) {
	g.refs--
	if g.refs > 0 {
		return
	}
	if g.idle(time.Now()) {
		delete(gs.m, key)
	}
	if len(gs.m) < max(gs.sweepAt, 1024) {
		return
	}
	now := time.Now()
	for k, o := range gs.m {
		if o.refs == 0 && o.idle(now) {
			delete(gs.m, k)
		}
	}
	gs.sweepAt = 2 * len(gs.m)
}

// idle reports whether the gate's rate holds nothing back at now.
func (g *gate) idle(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.next.After(now)
}

// wait delays a new connection so that the destination sees at most
// perSecond of them.
func (g *gate) wait(ctx context.Context, perSecond float64) error {
	if perSecond <= 0 {
		return nil
	}
	g.mu.Lock()
	now := time.Now()
	start := now
	if g.next.After(now) {
		start = g.next
	}
	g.next = start.Add(time.Duration(float64(time.Second) / perSecond))
	g.mu.Unlock()
	if d := start.Sub(now); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// conn is an open conversation.
type conn struct {
	raw    net.Conn
	client *smtp.Client
}

func (c *conn) close() { c.raw.Close() }

func (c *conn) quit() {
	_ = c.client.Quit()
}

// open connects to target, reads the banner, says EHLO, upgrades with
// STARTTLS when offered (and tryTLS), and returns the conversation ready
// for MAIL FROM. On failure it returns the result to report.
func (p *Prober) open(ctx context.Context, target, host string, tryTLS bool) (*conn, emailcheck.SMTPResult, bool) {
	raw, err := p.cfg.Dial(ctx, "tcp", target)
	if err != nil {
		return nil, unknown(0, "", "cannot connect to "+host), false
	}
	// The context ends the opening at once: it closes the connection.
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	fail := func(r emailcheck.SMTPResult) (*conn, emailcheck.SMTPResult, bool) {
		stop()
		raw.Close()
		return nil, r, false
	}
	raw.SetDeadline(time.Now().Add(p.cfg.Timeout))

	// Banner and first EHLO by hand, so that STARTTLS can follow our EHLO:
	// go-smtp's client upgrades only after an EHLO of its own name.
	tp := textproto.NewConn(raw)
	if code, msg, err := tp.ReadResponse(220); err != nil {
		return fail(replyResult(code, msg, err, "banner"))
	}
	id, err := tp.Cmd("EHLO %s", p.cfg.HELO)
	if err != nil {
		return fail(unknown(0, "", "the server ended the conversation"))
	}
	tp.StartResponse(id)
	code, msg, err := tp.ReadResponse(250)
	tp.EndResponse(id)
	if err != nil {
		return fail(replyResult(code, msg, err, "EHLO"))
	}
	stream := raw
	if tryTLS && offers(msg, "STARTTLS") {
		id, err := tp.Cmd("STARTTLS")
		if err != nil {
			return fail(unknown(0, "", "the server ended the conversation"))
		}
		tp.StartResponse(id)
		code, _, err := tp.ReadResponse(220)
		tp.EndResponse(id)
		switch {
		case err == nil:
			tc := tls.Client(raw, &tls.Config{ServerName: host, InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}) //nolint:gosec // opportunistic TLS between mail servers
			if err := tc.HandshakeContext(ctx); err != nil {
				// A failed handshake leaves the connection unusable: start
				// again in clear text.
				stop()
				raw.Close()
				return p.open(ctx, target, host, false)
			}
			stream = tc
		case code == 0:
			return fail(unknown(0, "", "the server ended the conversation"))
		}
		// A refused STARTTLS: go on in clear text on this connection.
	}
	// go-smtp's client expects a banner first: hand it one, then it says
	// EHLO again (required after STARTTLS, harmless otherwise).
	if tp.R.Buffered() > 0 {
		// The server spoke out of turn (pipelining we did not ask for).
		return fail(unknown(0, "", "the server sent data out of turn"))
	}
	// From here go-smtp sets a deadline per command.
	raw.SetDeadline(time.Time{})
	client := smtp.NewClient(&greeted{Conn: stream, r: io.MultiReader(strings.NewReader("220 ready\r\n"), stream)})
	client.CommandTimeout = p.cfg.Timeout
	if err := client.Hello(p.cfg.HELO); err != nil {
		return fail(errResult(err, "EHLO"))
	}
	if !stop() {
		return fail(unknown(0, "", "no answer within the probe's time"))
	}
	return &conn{raw: raw, client: client}, emailcheck.SMTPResult{}, true
}

// greeted is a connection whose first bytes come from r.
type greeted struct {
	net.Conn
	r io.Reader
}

func (g *greeted) Read(b []byte) (int, error) { return g.r.Read(b) }

// offers reports whether an EHLO reply lists the extension.
func offers(ehlo, ext string) bool {
	sc := bufio.NewScanner(strings.NewReader(ehlo))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 0 && strings.EqualFold(f[0], ext) {
			return true
		}
	}
	return false
}

// ask asks about one address on c: MAIL FROM, RCPT TO, the catch-all
// check when needed, RSET. It reports whether c can still be used.
func (p *Prober) ask(c *conn, domain string, j *job) (emailcheck.SMTPResult, bool) {
	// The asker's context ends the conversation at once.
	stop := context.AfterFunc(j.ctx, func() { c.raw.Close() })
	defer stop()
	if err := c.client.Mail(p.cfg.MailFrom, &smtp.MailOptions{UTF8: j.utf8}); err != nil {
		return errResult(err, "MAIL FROM"), alive(err)
	}
	err := c.client.Rcpt(j.address, nil)
	res := rcptResult(err)
	if res.Mailbox == emailcheck.MailboxExists {
		if v, ok := p.cachedCatchAll(domain); ok {
			res.CatchAll = &v
		} else if v, ok := p.checkCatchAll(c, domain); ok {
			res.CatchAll = &v
		}
		if res.CatchAll != nil && *res.CatchAll {
			res.Detail = "the server accepts any address at the domain"
		}
	}
	if err != nil && !alive(err) {
		return res, false
	}
	if err := c.client.Reset(); err != nil {
		return res, false
	}
	return res, true
}

// checkCatchAll names a random local part at the domain in the open
// transaction and caches what the server says of it.
func (p *Prober) checkCatchAll(c *conn, domain string) (bool, bool) {
	local := "vm-" + strings.ToLower(rand.Text()[:20])
	err := c.client.Rcpt(local+"@"+domain, nil)
	r := rcptResult(err)
	var v bool
	switch r.Mailbox {
	case emailcheck.MailboxExists:
		v = true
	case emailcheck.MailboxAbsent:
		v = false
	default:
		return false, false
	}
	p.mu.Lock()
	p.catchAll[domain] = catchAllEntry{value: v, expires: time.Now().Add(p.cfg.CatchAllTTL)}
	p.mu.Unlock()
	return v, true
}

func (p *Prober) cachedCatchAll(domain string) (bool, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.catchAll[domain]
	if !ok || time.Now().After(e.expires) {
		return false, false
	}
	return e.value, true
}

// alive reports whether the conversation can go on after err.
func alive(err error) bool {
	var se *smtp.SMTPError
	return errors.As(err, &se) && se.Code != 421
}

// rcptResult reads the reply to RCPT TO.
func rcptResult(err error) emailcheck.SMTPResult {
	if err == nil {
		return emailcheck.SMTPResult{Checked: true, Mailbox: emailcheck.MailboxExists, Code: ptr(250), Detail: "the server accepted the mailbox"}
	}
	var se *smtp.SMTPError
	if !errors.As(err, &se) {
		return unknown(0, "", "the server ended the conversation")
	}
	r := fromReply(se.Code, enhanced(se), se.Message)
	r.Checked = true
	switch {
	case se.Code == 250 || se.Code == 251:
		r.Mailbox, r.Detail = emailcheck.MailboxExists, "the server accepted the mailbox"
	case (se.Code == 550 || se.Code == 551 || se.Code == 553) && absentCode(enhanced(se)):
		r.Mailbox, r.Detail = emailcheck.MailboxAbsent, "the server refused the mailbox: "+firstLine(se.Message)
	case se.Code >= 400 && se.Code < 500:
		r.Detail = "temporary failure, mailbox not judged: " + firstLine(se.Message)
	case strings.HasPrefix(enhanced(se), "5.7."):
		r.Detail = "policy block, mailbox not judged: " + firstLine(se.Message)
	default:
		r.Detail = "the server refused without saying why: " + firstLine(se.Message)
	}
	return r
}

// absentCode reports whether an enhanced code says the mailbox does not
// exist: 5.1.1 (bad mailbox), 5.1.10 (null MX at the recipient), 5.2.1
// (mailbox disabled) and Microsoft 365's 5.4.1 (recipient rejected).
func absentCode(ec string) bool {
	switch ec {
	case "5.1.1", "5.1.10", "5.2.1", "5.4.1":
		return true
	}
	return false
}

// errResult reports an error of a command other than RCPT: never a bad
// mailbox.
func errResult(err error, stage string) emailcheck.SMTPResult {
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		r := fromReply(se.Code, enhanced(se), se.Message)
		r.Detail = fmt.Sprintf("the server refused %s, mailbox not judged: %s", stage, firstLine(se.Message))
		return r
	}
	return unknown(0, "", "the server ended the conversation at "+stage)
}

// replyResult reports a failed banner or EHLO read by hand.
func replyResult(code int, msg string, err error, stage string) emailcheck.SMTPResult {
	var te *textproto.Error
	if errors.As(err, &te) {
		ec, text := splitEnhanced(te.Msg)
		r := fromReply(te.Code, ec, text)
		r.Detail = fmt.Sprintf("the server refused at the %s, mailbox not judged: %s", stage, firstLine(text))
		return r
	}
	return unknown(code, "", fmt.Sprintf("no %s from the server", stage))
}

func fromReply(code int, ec, msg string) emailcheck.SMTPResult {
	r := emailcheck.SMTPResult{Mailbox: emailcheck.MailboxUnknown, Code: ptr(code)}
	if ec != "" {
		r.EnhancedCode = &ec
	}
	return r
}

func unknown(code int, ec, detail string) emailcheck.SMTPResult {
	r := emailcheck.SMTPResult{Mailbox: emailcheck.MailboxUnknown, Detail: detail}
	if code != 0 {
		r.Code = ptr(code)
	}
	if ec != "" {
		r.EnhancedCode = &ec
	}
	return r
}

// enhanced returns the enhanced code of a reply as text, or "". A
// multi-line reply is read whole: some servers put the code on its last
// line only.
func enhanced(se *smtp.SMTPError) string {
	ec := se.EnhancedCode
	if ec != (smtp.EnhancedCode{}) && ec != smtp.NoEnhancedCode {
		return fmt.Sprintf("%d.%d.%d", ec[0], ec[1], ec[2])
	}
	for line := range strings.Lines(se.Message) {
		if code, _ := splitEnhanced(strings.TrimSpace(line)); code != "" {
			return code
		}
	}
	return ""
}

// splitEnhanced splits "5.1.1 text" into the code and the text.
func splitEnhanced(msg string) (string, string) {
	code, rest, ok := strings.Cut(msg, " ")
	if !ok {
		return "", msg
	}
	parts := strings.Split(code, ".")
	if len(parts) != 3 {
		return "", msg
	}
	for _, p := range parts {
		if _, err := strconv.Atoi(p); err != nil {
			return "", msg
		}
	}
	return code, rest
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

func ptr[T any](v T) *T { return &v }
