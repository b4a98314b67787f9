package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/validmail/validmail/emailcheck"
)

// likely is a fixed result for output tests.
func likely(email string) emailcheck.Result {
	canonical, suggestion := "ann@gmail.com", "ann@gmail.com"
	return emailcheck.Result{
		Email:       email,
		Validations: emailcheck.Validations{Syntax: true, DomainExists: true, MXRecords: true},
		Confidence: emailcheck.Confidence{
			Score: 80, Status: emailcheck.StatusLikely, AliasStatus: emailcheck.AliasConfirmed,
			CanonicalEmail: &canonical, EquivalentDomains: []string{"googlemail.com"},
		},
		Provider:   emailcheck.Provider{Name: "Google"},
		DidYouMean: &suggestion,
		Reason:     emailcheck.ReasonValid,
		Meta:       emailcheck.Meta{Source: "api"},
	}
}

func invalidFormat(email string) emailcheck.Result {
	return emailcheck.Result{
		Email: email,
		Confidence: emailcheck.Confidence{
			Status: emailcheck.StatusInvalidFormat, AliasStatus: emailcheck.AliasMaybeNot,
			EquivalentDomains: []string{},
		},
		Provider: emailcheck.Provider{Name: "Unknown"},
		Reason:   emailcheck.ReasonInvalidSyntax,
		Meta:     emailcheck.Meta{Source: "api"},
	}
}

func TestWriters(t *testing.T) {
	t.Parallel()
	const resultJSON = `"result":{"email":"ann+x@gmail.com","validations":{"syntax":true,"domain_exists":true,"mx_records":true,"is_disposable":false},"confidence":{"confidence_score":80,"status":"LIKELY","is_role_based":false,"alias_status":"ALIAS_CONFIRMED","canonical_email":"ann@gmail.com","equivalent_domains":["googlemail.com"]},"provider":{"name":"Google","is_free":false},"did_you_mean":"ann@gmail.com","reason":"valid","meta":{"latency_ms":0,"source":"api"}}`
	const badJSON = `"result":{"email":"b@x","validations":{"syntax":false,"domain_exists":false,"mx_records":false,"is_disposable":false},"confidence":{"confidence_score":0,"status":"INVALID_FORMAT","is_role_based":false,"alias_status":"MAYBE_NOT_ALIAS","canonical_email":null,"equivalent_domains":[]},"provider":{"name":"Unknown","is_free":false},"did_you_mean":null,"reason":"invalid_syntax","meta":{"latency_ms":0,"source":"api"}}`
	header := format{csv: true, comma: ',', header: []string{"name", "email", "name"}, column: 1, width: 3}
	tests := []struct {
		name   string
		format string
		f      format
		rows   []row
		want   string
	}{
		{
			name:   "csv from plain text",
			format: "csv",
			f:      format{},
			rows:   []row{{line: 1, email: "ann+x@gmail.com"}},
			want: "email,status,score,reason,did_you_mean,is_disposable,is_role_based,is_free,provider,domain_exists,mx_records,alias,canonical\n" +
				"ann+x@gmail.com,LIKELY,80,valid,ann@gmail.com,false,false,false,Google,true,true,ALIAS_CONFIRMED,ann@gmail.com\n",
		},
		{
			name:   "csv with header, short and long rows",
			format: "csv",
			f:      header,
			rows: []row{
				{line: 2, email: "ann+x@gmail.com", fields: []string{"Ann", "ann+x@gmail.com"}},
				{line: 3, email: "b@x", fields: []string{"B", "b@x", "B2", "extra, with comma"}, err: errors.New("bad")},
			},
			want: "name,email,name,status,score,reason,did_you_mean,is_disposable,is_role_based,is_free,provider,domain_exists,mx_records,alias,canonical\n" +
				"Ann,ann+x@gmail.com,,LIKELY,80,valid,ann@gmail.com,false,false,false,Google,true,true,ALIAS_CONFIRMED,ann@gmail.com\n" +
				"B,b@x,B2,INVALID_FORMAT,0,invalid_syntax,,false,false,false,Unknown,false,false,MAYBE_NOT_ALIAS,,\"extra, with comma\"\n",
		},
		{
			name:   "csv without header",
			format: "csv",
			f:      format{csv: true, comma: ';', column: 0, width: 2},
			rows:   []row{{line: 1, email: "ann+x@gmail.com", fields: []string{"ann+x@gmail.com", "Ann"}}},
			want: "field1,field2,status,score,reason,did_you_mean,is_disposable,is_role_based,is_free,provider,domain_exists,mx_records,alias,canonical\n" +
				"ann+x@gmail.com,Ann,LIKELY,80,valid,ann@gmail.com,false,false,false,Google,true,true,ALIAS_CONFIRMED,ann@gmail.com\n",
		},
		{
			name:   "jsonl from plain text",
			format: "jsonl",
			f:      format{},
			rows:   []row{{line: 7, email: "ann+x@gmail.com"}},
			want:   `{"line":7,"email":"ann+x@gmail.com",` + resultJSON + "}\n",
		},
		{
			name:   "jsonl with header keeps column order and repeated names",
			format: "jsonl",
			f:      header,
			rows: []row{
				{line: 2, email: "ann+x@gmail.com", fields: []string{"Ann", "ann+x@gmail.com"}},
				{line: 3, email: "b@x", fields: []string{"B", "b@x", "B2", "more"}, err: errors.New("bad")},
			},
			want: `{"line":2,"row":{"name":"Ann","email":"ann+x@gmail.com","name_2":""},"email":"ann+x@gmail.com",` + resultJSON + "}\n" +
				`{"line":3,"row":{"name":"B","email":"b@x","name_2":"B2"},"extra":["more"],"email":"b@x","error":"bad",` + badJSON + "}\n",
		},
		{
			name:   "jsonl without header",
			format: "jsonl",
			f:      format{csv: true, comma: ',', width: 2},
			rows:   []row{{line: 1, email: "ann+x@gmail.com", fields: []string{"ann+x@gmail.com", "Ann"}}},
			want:   `{"line":1,"fields":["ann+x@gmail.com","Ann"],"email":"ann+x@gmail.com",` + resultJSON + "}\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			w, err := newRowWriter(&b, tt.format, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.header(); err != nil {
				t.Fatal(err)
			}
			for _, r := range tt.rows {
				res := likely(r.email)
				if r.err != nil {
					res = invalidFormat(r.email)
				}
				if err := w.write(r, res); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.flush(); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != tt.want {
				t.Errorf("output:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestUnknownFormat(t *testing.T) {
	t.Parallel()
	if _, err := newRowWriter(&strings.Builder{}, "xml", format{}); err == nil {
		t.Error("newRowWriter accepted format xml")
	}
}

func TestThousands(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
