package emailcheck

import (
	"testing"
	"time"

	"github.com/miekg/dns"
)

// An NXDOMAIN counts only with the SOA of a zone the name is in: a
// filtering resolver's answer with its policy zone's SOA proves nothing.
func TestHasSOA(t *testing.T) {
	nx := func(owner string) *dns.Msg {
		m := new(dns.Msg)
		m.Rcode = dns.RcodeNameError
		m.Ns = []dns.RR{&dns.SOA{Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 60}, Ns: "ns.", Mbox: "h.", Minttl: 60}}
		return m
	}
	for _, tt := range []struct {
		owner, name string
		want        bool
	}{
		{"gone.example.", "gone.example.", true},
		{"example.", "x.gone.example.", true},
		{".", "gone.example.", true},
		{"rpz.local.", "gmail.com.", false},
		{"other.com.", "gmail.com.", false},
	} {
		if got := hasSOA(nx(tt.owner), tt.name); got != tt.want {
			t.Errorf("SOA of %s for %s: %v, want %v", tt.owner, tt.name, got, tt.want)
		}
	}
	if hasSOA(new(dns.Msg), "gmail.com.") {
		t.Error("an answer without an SOA has one")
	}
}

// An answer hinting at a lie asks for a new check at most once per
// distrustGap: anyone can submit a domain whose servers leave out the SOA.
func TestDistrustBounded(t *testing.T) {
	r := &resolver{}
	r.trust.checkedAt = time.Now()
	r.distrust()
	if r.trust.checkedAt.IsZero() {
		t.Fatal("a verdict just made was dropped")
	}
	r.trust.checkedAt = time.Now().Add(-distrustGap - time.Second)
	r.distrust()
	if !r.trust.checkedAt.IsZero() {
		t.Fatal("an old verdict was kept after a hint of a lie")
	}
}
