package dnstest_test

import (
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/validmail/validmail/emailcheck/dnstest"
)

// The proxy relays queries and answers, drops every n-th query, and
// drops everything while dead; it counts what it received.
func TestProxy(t *testing.T) {
	srv := dnstest.Start(t, dnstest.Zone{"example.com": {MX: []dnstest.MX{{Pref: 10, Host: "mx.example.com"}}}}, nil)
	p := dnstest.StartProxy(t, srv.Addr())
	// A query dropped is never answered, so a short wait tells; a query
	// relayed is waited for long, however busy the machine.
	answered := func(wait time.Duration) bool {
		m := new(dns.Msg)
		m.SetQuestion("example.com.", dns.TypeMX)
		r, _, err := (&dns.Client{Net: "udp", Timeout: wait}).Exchange(m, p.Addr())
		return err == nil && len(r.Answer) == 1
	}
	relayed := func() bool { return answered(10 * time.Second) }
	dropped := func() bool { return !answered(200 * time.Millisecond) }
	if !relayed() {
		t.Fatal("no answer through the proxy")
	}
	p.SetDropEvery(2)
	// The second query received is dropped, the third relayed.
	if !dropped() {
		t.Fatal("the second query was answered; want it dropped")
	}
	if !relayed() {
		t.Fatal("the third query was not answered")
	}
	p.SetDropEvery(0)
	p.SetDead(true)
	if !dropped() {
		t.Fatal("answered while dead")
	}
	p.SetDead(false)
	if !relayed() {
		t.Fatal("not answered once alive again")
	}
	if n := p.Received(); n != 5 {
		t.Fatalf("received %d queries; want 5", n)
	}
}
