package smtpprobe

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
)

// The default dialer checks the rule again just before connecting: an
// address that reaches it without passing the rule is refused before any
// packet is sent.
func TestDialerChecksAgain(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	p, err := New(Config{HELO: "probe.validmail.test", MailFrom: "bounces@validmail.test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.cfg.Dial(context.Background(), "tcp", ln.Addr().String()); !errors.Is(err, ErrAddressNotAllowed) {
		t.Fatalf("dial %s: %v, want ErrAddressNotAllowed", ln.Addr(), err)
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the loopback server accepted %d connections", n)
	}

	open, err := New(Config{HELO: "probe.validmail.test", MailFrom: "bounces@validmail.test", AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := open.cfg.Dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial %s with AllowPrivate: %v", ln.Addr(), err)
	}
	c.Close()
}

// The forms of one IPv4 address share its limit, and gates are forgotten
// once unused.
func TestFormsShareOneLimit(t *testing.T) {
	t.Parallel()
	p, err := New(Config{HELO: "probe.validmail.test", MailFrom: "bounces@validmail.test", AllowPrivate: true, ConnsPerSecond: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r1, err := p.acquire(ctx, netip.MustParseAddr("192.0.2.25"))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := p.acquire(ctx, netip.MustParseAddr("64:ff9b::c000:219")) // NAT64 of 192.0.2.25
	if err != nil {
		t.Fatal(err)
	}
	for _, form := range []string{"::ffff:192.0.2.25", "2002:c000:219::1", "::192.0.2.25"} {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := p.acquire(cctx, netip.MustParseAddr(form)); err == nil {
			t.Errorf("a third connection to 192.0.2.25 as %s was let through", form)
		}
	}
	// Another address of the same /24 has slots of its own, within the
	// network's.
	r3, err := p.acquire(ctx, netip.MustParseAddr("192.0.2.26"))
	if err != nil {
		t.Fatal(err)
	}
	r1()
	r2()
	r3()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.addrs.m) != 0 || len(p.nets.m) != 0 {
		t.Errorf("%d address and %d network gates left after every connection ended", len(p.addrs.m), len(p.nets.m))
	}
}
