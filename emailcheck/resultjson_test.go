package emailcheck_test

import (
	"encoding/json"
	"testing"

	"github.com/validmail/validmail/emailcheck"
)

// resultCases are results AppendJSON must encode as json.Marshal does.
func resultCases() []emailcheck.Result {
	s := func(v string) *string { return &v }
	full := emailcheck.Result{Email: "Jane.Doe+tag@gmail.com"}
	full.Validations = emailcheck.Validations{Syntax: true, DomainExists: true, MXRecords: true, IsDisposable: true}
	full.Confidence = emailcheck.Confidence{Score: 95, Status: emailcheck.StatusLikely, IsRoleBased: true,
		AliasStatus: emailcheck.AliasConfirmed, CanonicalEmail: s("janedoe@gmail.com"), EquivalentDomains: []string{"gmail.com", "googlemail.com"}}
	full.Provider = emailcheck.Provider{Name: "Gmail", IsFree: true}
	full.DidYouMean = s("jane@gmail.com")
	full.Reason = emailcheck.ReasonDisposableMX
	full.Meta = emailcheck.Meta{LatencyMS: 12, Source: emailcheck.SourceAPI}
	empty := emailcheck.Result{}
	emptyList := emailcheck.Result{Email: "x@y.z"}
	emptyList.Confidence.EquivalentDomains = []string{}
	odd := emailcheck.Result{Email: "\"<a&b>\"\\\b\f\n\r\t\x00\x1f\x7f\u2028\u2029é\xff\xfe😀@x", Meta: emailcheck.Meta{LatencyMS: -3}}
	odd.Confidence.Score = -1
	odd.Reason = "\"<&>\x00\xff\u2028"
	probed := full
	probed.SMTP = &emailcheck.SMTPResult{}
	return []emailcheck.Result{full, empty, emptyList, odd, probed}
}

func TestAppendJSON(t *testing.T) {
	for i, r := range resultCases() {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.AppendJSON(nil); string(got) != string(want) {
			t.Errorf("case %d:\n got %s\nwant %s", i, got, want)
		}
		// Appends, leaving what was there.
		if got := r.AppendJSON([]byte("x")); string(got) != "x"+string(want) {
			t.Errorf("case %d: prefix lost: %s", i, got)
		}
	}
}

// FuzzAppendJSON: for any strings in any field, AppendJSON gives the
// bytes of json.Marshal.
func FuzzAppendJSON(f *testing.F) {
	f.Add("jane@example.com", "LIKELY", "Gmail", "api", "gmail.com", "x", int64(3), true)
	f.Add("\"<&>\x00\xff\u2028", "", "", "", "", "\\", int64(-1), false)
	f.Fuzz(func(t *testing.T, email, status, provider, source, domain, suggestion string, latency int64, flag bool) {
		r := emailcheck.Result{Email: email}
		r.Validations = emailcheck.Validations{Syntax: flag, MXRecords: !flag}
		r.Confidence = emailcheck.Confidence{Score: int(latency % 101), Status: emailcheck.Status(status), IsRoleBased: flag,
			AliasStatus: emailcheck.AliasStatus(domain), EquivalentDomains: []string{domain, status}}
		if flag {
			r.Confidence.CanonicalEmail = &suggestion
			r.Confidence.EquivalentDomains = nil
		} else {
			r.DidYouMean = &suggestion
		}
		r.Provider = emailcheck.Provider{Name: provider, IsFree: !flag}
		r.Reason = emailcheck.Reason(suggestion + status)
		r.Meta = emailcheck.Meta{LatencyMS: latency, Source: source}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.AppendJSON(nil); string(got) != string(want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}

func BenchmarkAppendJSON(b *testing.B) {
	r := resultCases()[0]
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 1024)
		for b.Loop() {
			buf = r.AppendJSON(buf[:0])
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
