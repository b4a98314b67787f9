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

// A server that lost one query while nothing else was in flight (its
// RTO doubled: it went silent) is sent queries again once it answers,
// though the other server answers all the while: a probe finds it
// answering. Passed over for good, it would leave every lookup to the
// other server, however slow that one is or gets.
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
	// Both measured first: a loss then doubles the first server's RTO
	// from a round trip on the loopback, within rttBand of the other's.
	for i := 0; first.stats().SRTT == 0 || v.resolver.servers[1].stats().SRTT == 0; i++ {
		if i == 20 {
			t.Fatalf("both servers not measured in 20 lookups: %+v", v.ResolverStats())
		}
		if _, err := v.Validate(ctx, fmt.Sprintf("u@warm%d.probe", i)); err != nil {
			t.Fatal(err)
		}
	}
	a.dead.Store(true)
	for i := 0; !silent(); i++ {
		if i == 20 {
			t.Fatal("the first server did not go silent in 20 lookups")
		}
		if res, err := v.Validate(ctx, fmt.Sprintf("u@lost%d.probe", i)); err != nil || res.Confidence.Status != StatusLikely {
			t.Fatalf("lookup while the first server is dead: %v %v", res.Confidence.Status, err)
		}
	}
	a.dead.Store(false)
	before := a.received.Load()
	for i := 0; a.received.Load() == before; i++ {
		if i == 200 {
			t.Fatalf("the first server, answering again, got no query in 200 lookups: %+v", v.ResolverStats())
		}
		if res, err := v.Validate(ctx, fmt.Sprintf("u@back%d.probe", i)); err != nil || res.Confidence.Status != StatusLikely {
			t.Fatalf("lookup with both servers answering: %v %v", res.Confidence.Status, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitCond(t, func() bool { return !silent() })
}
