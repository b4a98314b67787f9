package emailcheck

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/validmail/validmail/emailcheck/dnstest"
)

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
	a, b := dnstest.StartProxy(t, srv.Addr()), dnstest.StartProxy(t, srv.Addr())
	v, err := New(&Config{Nameservers: []string{a.Addr(), b.Addr()}, AllowPrivateMX: true})
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
	before := a.Received()
	// Until a probe's answer came in time (on a busy machine, one may not,
	// and the next probe comes an RTO later).
	for i := 0; a.Received() == before || silent(); i++ {
		if i == 200 {
			t.Fatalf("the first server, answering again, not heard in 200 lookups: %d queries, %+v", a.Received()-before, v.ResolverStats())
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
	srv := dnstest.Start(t, dnstest.Zone{"example.com": {MX: []dnstest.MX{{Pref: 10, Host: "mx.example.com"}}}}, nil)
	dead := dnstest.StartProxy(t, srv.Addr())
	dead.SetDead(true)
	r := newResolver([]string{dead.Addr(), srv.Addr()}, 10*time.Second, 3, 2)
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
	if n := dead.Received(); n != 0 {
		t.Fatalf("the dead server got %d queries; want none, the live one answering", n)
	}
	a.release(false)
}
