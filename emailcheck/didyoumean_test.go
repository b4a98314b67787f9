package emailcheck_test

import (
	"context"
	"testing"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
)

// did_you_mean is filled from the lookups the validation makes anyway and
// never changes the verdict.
func TestDidYouMean(t *testing.T) {
	t.Parallel()
	srv := dnstest.Start(t, dnstest.Zone{
		"gmail.com":     {MX: []dnstest.MX{{Pref: 5, Host: "gmail-smtp-in.l.google.com"}}},
		"gmial.com":     {MX: []dnstest.MX{{Pref: 10, Host: "mx.typosquat.net"}}}, // a typosquat that takes mail
		"acme-corp.com": {MX: []dnstest.MX{{Pref: 10, Host: "mx.acme-corp.com"}}},
	}, nil)
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	tests := []struct {
		email  string
		want   string
		status emailcheck.Status
	}{
		{"Jane.Doe@gamil.com", "Jane.Doe@gmail.com", emailcheck.StatusInvalidDomain},
		{"jane@gmial.com", "jane@gmail.com", emailcheck.StatusDisposable}, // on the burner list too
		{"jane@gmail.con", "jane@gmail.com", emailcheck.StatusInvalidDomain},
		{"jane@hotmial.com", "jane@hotmail.com", emailcheck.StatusInvalidDomain},
		{"jane@gmail.com", "", emailcheck.StatusLikely},
		{"jane@acme-corp.com", "", emailcheck.StatusLikely},
		{"jane@acme-corp.con", "jane@acme-corp.com", emailcheck.StatusInvalidDomain},
		{"not an address", "", emailcheck.StatusInvalidFormat},
	}
	for _, tt := range tests {
		srv.ResetCounts()
		res, err := v.Validate(context.Background(), tt.email)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if res.DidYouMean != nil {
			got = *res.DidYouMean
		}
		if got != tt.want || res.Confidence.Status != tt.status {
			t.Errorf("%s: did_you_mean %q, status %s; want %q, %s", tt.email, got, res.Confidence.Status, tt.want, tt.status)
		}
		// The same score as without a suggestion: a status decides it.
		checkScoreConsistent(t, res)
		if tt.status == emailcheck.StatusInvalidDomain && srv.Queries() != 1 {
			t.Errorf("%s: %d queries for an NXDOMAIN with a suggestion, want 1 (the MX query)", tt.email, srv.Queries())
		}
	}
}
