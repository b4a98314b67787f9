package emailcheck_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
)

func ExampleValidator_Validate() {
	// A DNS server on loopback stands in for the Internet here; in
	// production leave Nameservers empty to use /etc/resolv.conf.
	srv, err := dnstest.NewServer(dnstest.Zone{
		"gmail.com": {MX: []dnstest.MX{{Pref: 5, Host: "gmail-smtp-in.l.google.com"}}},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}})
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()

	res, err := v.Validate(context.Background(), "Jane.Doe+news@gmail.com")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Confidence.Status, res.Confidence.Score, res.Provider.Name)
	fmt.Println(res.Confidence.AliasStatus, *res.Confidence.CanonicalEmail, res.Confidence.EquivalentDomains)
	// Output:
	// LIKELY 90 Google
	// ALIAS_CONFIRMED janedoe@gmail.com [googlemail.com]
}

func ExampleValidator_ValidateMany() {
	srv, err := dnstest.NewServer(dnstest.Zone{
		"shop.io": {MX: []dnstest.MX{{Pref: 10, Host: "mx.shop.io"}}},
		"typo.io": {A: []string{"192.0.2.7"}},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}})
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()

	list := []string{"ann@shop.io", "bob@typo.io", "not an address", "eve@gone.io", "info@shop.io"}
	for res, err := range v.ValidateMany(context.Background(), slices.Values(list), nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%-15s %-14s %d\n", res.Email, res.Confidence.Status, res.Confidence.Score)
	}
	// Output:
	// ann@shop.io     LIKELY         90
	// bob@typo.io     NO_MX_RECORDS  10
	// not an address  INVALID_FORMAT 0
	// eve@gone.io     INVALID_DOMAIN 5
	// info@shop.io    LIKELY         75
}

func ExampleResult_AppendJSON() {
	res := emailcheck.Result{Email: "jane@example.org"}
	res.Confidence.Status = emailcheck.StatusInvalidDomain
	res.Reason = emailcheck.ReasonNoSuchDomain
	res.Meta.Source = emailcheck.SourceAPI
	// One buffer, reused for every result a server writes.
	buf := make([]byte, 0, 512)
	buf = res.AppendJSON(buf[:0])
	fmt.Println(string(buf))
	// Output:
	// {"email":"jane@example.org","validations":{"syntax":false,"domain_exists":false,"mx_records":false,"is_disposable":false},"confidence":{"confidence_score":0,"status":"INVALID_DOMAIN","is_role_based":false,"alias_status":"","canonical_email":null,"equivalent_domains":null},"provider":{"name":"","is_free":false},"did_you_mean":null,"reason":"no_such_domain","meta":{"latency_ms":0,"source":"api"}}
}

func ExampleDisposableFeed() {
	srv, err := dnstest.NewServer(dnstest.Zone{
		"fresh-burner.io": {MX: []dnstest.MX{{Pref: 10, Host: "mx.fresh-burner.io"}}},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	dir, err := os.MkdirTemp("", "feed")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	list := filepath.Join(dir, "disposable.txt")
	if err := os.WriteFile(list, []byte("# our own finds\nfresh-burner.io\n"), 0o600); err != nil {
		log.Fatal(err)
	}

	// A file or an http(s) URL; a host runs feed.Run(ctx) to reload it
	// as it changes.
	feed, err := emailcheck.NewDisposableFeed(list, nil)
	if err != nil {
		log.Fatal(err)
	}
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, DisposableFeed: feed})
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()
	ctx := context.Background()
	before, _ := v.Validate(ctx, "jane@fresh-burner.io")
	if err := feed.Reload(ctx); err != nil {
		log.Fatal(err)
	}
	after, _ := v.Validate(ctx, "jane@fresh-burner.io")
	fmt.Println(before.Confidence.Status, "then", after.Confidence.Status, after.Reason, feed.Stats().Domains)
	// Output:
	// LIKELY then DISPOSABLE disposable_list 1
}
