package emailcheck_test

import (
	"context"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
)

// A domain on no list whose MX host has the address of listed burners' MX
// hosts is disposable, once the validator has resolved listed burner
// domains of three registrable domains there and they outnumber the other
// domains seen there; a known domain, a domain hosted by a provider, and
// one elsewhere are not.
func TestDisposableByMXAddress(t *testing.T) {
	t.Parallel()
	const burnerAddr = "185.199.1.10" // the burner service's server
	mx := func(host string, addr string) []dnstest.MX {
		return []dnstest.MX{{Pref: 10, Host: host, Addrs: []string{addr}}}
	}
	zone := dnstest.Zone{
		// Listed burners, each with an MX host of its own name.
		"guerrillamail.com": {MX: mx("mx.guerrillamail.com", burnerAddr)},
		"sharklasers.com":   {MX: mx("mx.sharklasers.com", burnerAddr)},
		"grr.la":            {MX: mx("mx.grr.la", burnerAddr)},
		// Unlisted domains of the same service.
		"early-burner.xyz": {MX: mx("mx.early-burner.xyz", burnerAddr)},
		"fresh-burner.xyz": {MX: mx("mx.fresh-burner.xyz", burnerAddr)},
		"other-burner.xyz": {MX: mx("mail.other-burner.xyz", burnerAddr)},
		// A known provider and a domain hosted by a provider whose hosts
		// would share that address.
		"keemail.me":       {MX: mx("mx.keemail.me", burnerAddr)},
		"hosted-corp.com":  {MX: mx("hosted-corp-com.mail.protection.outlook.com", burnerAddr)},
		"acme-corp.com":    {MX: mx("mx.acme-corp.com", "185.199.2.20")},
		"private-mx.xyz":   {MX: mx("mx.private-mx.xyz", "10.0.0.5")},
		"private-peer.xyz": {MX: mx("mx.private-peer.xyz", "10.0.0.5")},
	}
	srv := dnstest.Start(t, zone, nil)
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, QueryTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	check := func(email string, want emailcheck.Status) {
		t.Helper()
		res, err := v.Validate(context.Background(), email)
		if err != nil {
			t.Fatal(err)
		}
		if res.Confidence.Status != want || res.Validations.IsDisposable != (want == emailcheck.StatusDisposable) {
			t.Errorf("%s: status %s, is_disposable %v; want %s", email, res.Confidence.Status, res.Validations.IsDisposable, want)
		}
	}
	// Nothing learned yet: the address means nothing.
	check("a@fresh-burner.xyz", emailcheck.StatusLikely)
	// One or two listed burners at the address are not enough: they
	// might share a web host with anyone.
	check("a@guerrillamail.com", emailcheck.StatusDisposable)
	check("a@sharklasers.com", emailcheck.StatusDisposable)
	check("a@early-burner.xyz", emailcheck.StatusLikely)
	// A third there, and the listed outnumber the two others seen: the
	// address is a burner service's.
	check("a@grr.la", emailcheck.StatusDisposable)
	check("a@other-burner.xyz", emailcheck.StatusDisposable)
	check("a@keemail.me", emailcheck.StatusLikely)      // the allowlist wins
	check("a@hosted-corp.com", emailcheck.StatusLikely) // a provider's host says nothing
	check("a@acme-corp.com", emailcheck.StatusLikely)   // elsewhere
	// Verdicts are cached with the domain: learned later, applied to
	// lookups made later.
	check("a@fresh-burner.xyz", emailcheck.StatusLikely)

	// Private addresses are never learned: the same one means different
	// hosts on different networks.
	vp, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, AllowPrivateMX: true, QueryTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer vp.Close()
	for _, d := range []string{"guerrillamail.com", "sharklasers.com", "grr.la"} {
		srv.Set(d, dnstest.Domain{MX: mx("mx."+d, "10.0.0.5")})
	}
	for _, email := range []string{"a@guerrillamail.com", "a@sharklasers.com", "a@grr.la", "a@private-peer.xyz"} {
		res, err := vp.Validate(context.Background(), email)
		if err != nil {
			t.Fatal(err)
		}
		if want := email != "a@private-peer.xyz"; res.Validations.IsDisposable != want {
			t.Errorf("private MX, %s: is_disposable %v, want %v", email, res.Validations.IsDisposable, want)
		}
	}
}

// Two listed domains on a shared web host, among more domains that are
// not listed, condemn none of their neighbours.
func TestDisposableByMXAddressSharedHost(t *testing.T) {
	t.Parallel()
	const shared = "185.199.3.30"
	zone := dnstest.Zone{}
	for _, d := range []string{"guerrillamail.com", "sharklasers.com", "shop-a.com", "shop-b.com", "shop-c.com", "shop-d.com"} {
		zone[d] = dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mail." + d, Addrs: []string{shared}}}}
	}
	srv := dnstest.Start(t, zone, nil)
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, QueryTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	for _, email := range []string{"a@guerrillamail.com", "a@shop-a.com", "a@shop-b.com", "a@shop-c.com", "a@sharklasers.com", "a@shop-d.com"} {
		res, err := v.Validate(context.Background(), email)
		if err != nil {
			t.Fatal(err)
		}
		want := email == "a@guerrillamail.com" || email == "a@sharklasers.com"
		if res.Validations.IsDisposable != want {
			t.Errorf("%s: is_disposable %v, want %v", email, res.Validations.IsDisposable, want)
		}
	}
}

// Listed domains on a shared web host condemn none of its customers:
// two listed domains are not enough, nor are listed domains of only two
// registrable domains however many, nor three once the customers seen
// there, before the listed ones as after, are as many. Each sequence is
// validated in order, by its own validator, at one address.
func TestDisposableByMXAddressSharedHostCustomers(t *testing.T) {
	t.Parallel()
	type step struct {
		domain     string
		disposable bool
	}
	sequences := map[string][]step{
		"listed first": {
			{"guerrillamail.com", true},
			{"sharklasers.com", true},
			{"shop-a.com", false}, // two listed, of two registrable domains
			{"x.guerrillamail.com", true},
			{"y.guerrillamail.com", true},
			{"shop-b.com", false}, // four listed, still of two registrable domains
			{"shop-c.com", false},
			{"shop-d.com", false},
			{"shop-e.com", false},
			{"grr.la", true},
			{"shop-f.com", false}, // five listed of three, five customers
		},
		"customers first": {
			{"shop-a.com", false},
			{"shop-b.com", false},
			{"shop-c.com", false},
			{"guerrillamail.com", true},
			{"sharklasers.com", true},
			{"grr.la", true},
			{"shop-d.com", false}, // three listed of three, three customers before them
			{"guerrillamail.net", true},
			{"pokemail.net", true},
			{"burner-like.xyz", true}, // five listed, four customers: now the address condemns
		},
	}
	for name, seq := range sequences {
		zone := dnstest.Zone{}
		for _, st := range seq {
			zone[st.domain] = dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mail." + st.domain, Addrs: []string{"185.199.4.40"}}}}
		}
		srv := dnstest.Start(t, zone, nil)
		v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, QueryTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		for i, st := range seq {
			res, err := v.Validate(context.Background(), "a@"+st.domain)
			if err != nil {
				t.Fatal(err)
			}
			if res.Validations.IsDisposable != st.disposable {
				t.Errorf("%s, step %d, %s: is_disposable %v, want %v", name, i, st.domain, res.Validations.IsDisposable, st.disposable)
			}
		}
	}
}

// Without a cache nothing is learned.
func TestDisposableByMXAddressNoCache(t *testing.T) {
	t.Parallel()
	zone := dnstest.Zone{
		"guerrillamail.com": {MX: []dnstest.MX{{Pref: 10, Host: "mx.guerrillamail.com", Addrs: []string{"185.199.1.10"}}}},
		"sharklasers.com":   {MX: []dnstest.MX{{Pref: 10, Host: "mx.sharklasers.com", Addrs: []string{"185.199.1.10"}}}},
		"fresh-burner.xyz":  {MX: []dnstest.MX{{Pref: 10, Host: "mx.fresh-burner.xyz", Addrs: []string{"185.199.1.10"}}}},
	}
	srv := dnstest.Start(t, zone, nil)
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, CacheSize: -1, QueryTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	for _, email := range []string{"a@guerrillamail.com", "a@sharklasers.com", "a@fresh-burner.xyz"} {
		res, err := v.Validate(context.Background(), email)
		if err != nil {
			t.Fatal(err)
		}
		if want := email != "a@fresh-burner.xyz"; res.Validations.IsDisposable != want {
			t.Errorf("%s: is_disposable %v, want %v", email, res.Validations.IsDisposable, want)
		}
	}
}

// A burner farm's address stays marked while its listed domains keep
// appearing there: twelve unlisted domains after four listed are all
// caught. On a shared host wrongly marked, the condemned domains wear the
// mark out all the same while no listed domain comes back.
func TestDisposableByMXAddressFarm(t *testing.T) {
	t.Parallel()
	listed := []string{"guerrillamail.com", "sharklasers.com", "grr.la", "guerrillamail.net"}
	var unlisted []string
	for _, c := range "abcdefghijklmnopqrst" {
		unlisted = append(unlisted, "farm-"+string(c)+".xyz")
	}
	zone := dnstest.Zone{}
	for _, d := range append(append([]string{}, listed...), unlisted...) {
		zone[d] = dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx." + d, Addrs: []string{"185.199.5.50"}}}}
	}
	srv := dnstest.Start(t, zone, nil)
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, QueryTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	disposable := func(d string) bool {
		t.Helper()
		res, err := v.Validate(context.Background(), "a@"+d)
		if err != nil {
			t.Fatal(err)
		}
		return res.Validations.IsDisposable
	}
	for _, d := range listed {
		if !disposable(d) {
			t.Fatalf("%s: not disposable", d)
		}
	}
	caught := 0
	for _, d := range unlisted[:12] {
		if disposable(d) {
			caught++
		}
	}
	if caught != 12 {
		t.Errorf("%d of 12 unlisted domains at the farm's address caught, want 12", caught)
	}
	// No listed domain comes back: the mark wears out before the twentieth.
	last := false
	for _, d := range unlisted[12:] {
		last = disposable(d)
	}
	if last {
		t.Error("the mark never wears out")
	}
}
