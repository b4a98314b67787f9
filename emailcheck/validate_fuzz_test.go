package emailcheck_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
)

var knownStatuses = map[emailcheck.Status]bool{
	emailcheck.StatusLikely: true, emailcheck.StatusInvalid: true, emailcheck.StatusInvalidFormat: true,
	emailcheck.StatusInvalidDomain: true, emailcheck.StatusNoMXRecords: true, emailcheck.StatusDisposable: true,
	emailcheck.StatusUnknown: true,
}

// FuzzValidate runs arbitrary input through the whole validator against a
// loopback DNS server whose zone exercises every DNS outcome.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{"jane@good.com", "x@mailinator.com", "a+b@gmail.com", "a-b@yahoo.com",
		"a@servfail.com", "a@nullmx.com", "a@alias.com", "a@bücher.de", "\"q\"@good.com", "a@[8.8.8.8]", "",
		"admin@x.test", "a@b@c"} {
		f.Add(s, false)
	}
	srv := dnstest.Start(f, testZone(), nil)
	validators := map[bool]*emailcheck.Validator{}
	for _, implicit := range []bool{false, true} {
		v, err := emailcheck.New(&emailcheck.Config{
			Nameservers: []string{srv.Addr()}, QueryTimeout: 50 * time.Millisecond, Retries: -1,
			ImplicitMX: implicit, AllowQuotedLocal: implicit, AllowAddressLiteral: implicit,
		})
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { v.Close() })
		validators[implicit] = v
	}
	f.Fuzz(func(t *testing.T, email string, options bool) {
		res, err := validators[options].Validate(context.Background(), email)
		if err != nil {
			t.Fatalf("Validate(%q): %v", email, err)
		}
		c := res.Confidence
		if !knownStatuses[c.Status] {
			t.Fatalf("unknown status %q", c.Status)
		}
		if (c.Status == emailcheck.StatusLikely) != (c.Score >= 50) || c.Score < 0 || c.Score >= 100 {
			t.Fatalf("status %s with score %d", c.Status, c.Score)
		}
		if !res.Validations.Syntax && c.Status != emailcheck.StatusInvalidFormat {
			t.Fatalf("syntax false but status %s", c.Status)
		}
		if len(email) > 254 && res.Validations.Syntax {
			t.Fatalf("accepted an address of %d octets", len(email))
		}
		if res.Email != email || c.EquivalentDomains == nil {
			t.Fatalf("result does not echo the input or lacks equivalent_domains: %+v", res)
		}
		if c.CanonicalEmail != nil {
			if _, err := emailcheck.ParseAddress(*c.CanonicalEmail, emailcheck.SyntaxOptions{}); err != nil {
				t.Fatalf("canonical %q of %q does not parse: %v", *c.CanonicalEmail, email, err)
			}
		}
		switch c.Status {
		case emailcheck.StatusLikely, emailcheck.StatusNoMXRecords, emailcheck.StatusDisposable:
			if !res.Validations.DomainExists {
				t.Fatalf("status %s without domain_exists", c.Status)
			}
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("json: %v", err)
		}
	})
}
