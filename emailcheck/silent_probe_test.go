package emailcheck

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/validmail/validmail/emailcheck/dnstest"
)

// switchProxy forwards UDP to a target, or, while dead is set, drops
// everything: a dead resolver whose socket stays open.
type switchProxy struct {
	addr     string
	dead     atomic.Bool
	received atomic.Int64 // queries received, forwarded or not
}

func newSwitchProxy(t *testing.T, target string) *switchProxy {
	t.Helper()
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	up, err := net.ResolveUDPAddr("udp", target)
	if err != nil {
		t.Fatal(err)
	}
	p := &switchProxy{addr: pc.LocalAddr().String()}
	go func() {
		buf := make([]byte, 65536)
		for {
			k, from, err := pc.ReadFromUDP(buf)
			if err != nil {
				return
			}
			p.received.Add(1)
			if p.dead.Load() {
				continue
			}
			msg := slices.Clone(buf[:k])
			go func() {
				c, err := net.DialUDP("udp", nil, up)
				if err != nil {
					return
				}
				defer c.Close()
				c.Write(msg)
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				b := make([]byte, 65536)
				m, err := c.Read(b)
				if err == nil && !p.dead.Load() {
					pc.WriteToUDP(b[:m], from)
				}
			}()
		}
	}()
	return p
}

// A server gone silent (a query lost while nothing else was in flight
// doubled its RTO) is sent queries again once it answers, though the
// other server answers all the while: a probe finds it answering. Passed
// over for good, it would leave every lookup to the other server,
// however slow that one is or gets.
func TestSilentServerIsProbed(t *testing.T) {
	srv := dnstest.Start(t, nil, &dnstest.Options{Fallback: func(name string) (dnstest.Domain, bool) {
		if !strings.HasSuffix(name, ".probe") {
			return dnstest.Domain{}, false
		}
		return dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx1.provider.net"}}}, true
	}})
	a, b := newSwitchProxy(t, srv.Addr()), newSwitchProxy(t, srv.Addr())
	v, err := New(&Config{Nameservers: []string{a.addr, b.addr}, AllowPrivateMX: true})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ctx := context.Background()
	first := v.resolver.servers[0]
	silent := func() bool { _, s := first.standing(); return s }
	// The first server just went silent, with an RTO (doubled from a
	// round trip on the loopback) in the band of the other's, whatever
	// the other measures on a busy machine.
	first.mu.Lock()
	first.rto, first.silent, first.backoff = 100*time.Millisecond, true, time.Now()
	first.mu.Unlock()
	before := a.received.Load()
	// Until a probe's answer came in time (on a busy machine, one may not,
	// and the next probe comes an RTO later).
	for i := 0; a.received.Load() == before || silent(); i++ {
		if i == 200 {
			t.Fatalf("the first server, answering again, not heard in 200 lookups: %d queries, %+v", a.received.Load()-before, v.ResolverStats())
		}
		if res, err := v.Validate(ctx, fmt.Sprintf("u@back%d.probe", i)); err != nil || res.Confidence.Status != StatusLikely {
			t.Fatalf("lookup with both servers answering: %v %v", res.Confidence.Status, err)
		}
		// 200 lookups 10 ms apart span well over the silent RTO.
		time.Sleep(10 * time.Millisecond)
	}
}

// A query waiting at a server gone silent, granted a place there when the
// server's own queries time out, goes instead to another server that
// answers again meanwhile: it is not sent into the silence.
func TestGrantAtSilentServerGoesToAnswering(t *testing.T) {
	dead, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	var deadGot atomic.Int64
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, _, err := dead.ReadFromUDP(buf); err != nil {
				return
			}
			deadGot.Add(1)
		}
	}()
	srv := dnstest.Start(t, dnstest.Zone{"example.com": {MX: []dnstest.MX{{Pref: 10, Host: "mx.example.com"}}}}, nil)
	r := newResolver([]string{dead.LocalAddr().String(), srv.Addr()}, 10*time.Second, 3, 2)
	defer r.close()
	a, b := r.servers[0], r.servers[1]
	// Both gone silent; the dead one's window full of queries that will
	// time out, and its RTO the lower: pick sends to it; once the live
	// one answers, out of the band of its RTO, so that no probe is due.
	ctx := context.Background()
	for range 2 {
		if err := a.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	a.mu.Lock()
	a.rto, a.silent, a.backoff = 600*time.Millisecond, true, time.Now()
	a.mu.Unlock()
	b.mu.Lock()
	b.rto, b.silent, b.backoff = 5*time.Second, true, time.Now()
	b.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		_, err := r.query(ctx, "example.com.", dns.TypeMX)
		done <- err
	}()
	waitCond(t, func() bool { return a.stats().Waiting == 1 })
	// The live one answers again (a sample), then a place at the dead
	// one is given back.
	b.sample(time.Now(), time.Millisecond)
	a.release(false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := deadGot.Load(); n != 0 {
		t.Fatalf("the dead server got %d queries; want none, the live one answering", n)
	}
	a.release(false)
}
