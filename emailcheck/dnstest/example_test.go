package dnstest_test

import (
	"fmt"
	"log"
	"time"

	"github.com/miekg/dns"

	"github.com/validmail/validmail/emailcheck/dnstest"
)

func Example() {
	s, err := dnstest.NewServer(dnstest.Zone{
		"example.net":        {MX: []dnstest.MX{{Pref: 10, Host: "mx.example.net"}}},
		"broken.example.net": {Rcode: dns.RcodeServerFailure},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	c := &dns.Client{Timeout: 30 * time.Second}
	for _, name := range []string{"example.net.", "broken.example.net.", "nowhere.example.net."} {
		r, _, err := c.Exchange(new(dns.Msg).SetQuestion(name, dns.TypeMX), s.Addr())
		if err != nil {
			log.Fatal(err)
		}
		fmt.Print(name, " ", dns.RcodeToString[r.Rcode])
		for _, rr := range r.Answer {
			mx := rr.(*dns.MX)
			fmt.Print(" ", mx.Preference, " ", mx.Mx)
		}
		fmt.Println()
	}
	fmt.Println("queries:", s.Queries())
	// Output:
	// example.net. NOERROR 10 mx.example.net.
	// broken.example.net. SERVFAIL
	// nowhere.example.net. NXDOMAIN
	// queries: 3
}
