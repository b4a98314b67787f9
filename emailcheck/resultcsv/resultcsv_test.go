package resultcsv_test

import (
	"encoding/csv"
	"os"
	"strings"
	"testing"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/resultcsv"
)

func ptr(s string) *string { return &s }

func TestAppend(t *testing.T) {
	full := &emailcheck.Result{
		Email:       "Info+x@gmial.com",
		Validations: emailcheck.Validations{Syntax: true, DomainExists: true, MXRecords: true, IsDisposable: true},
		DidYouMean:  ptr("Info+x@gmail.com"),
		Reason:      emailcheck.ReasonDisposableList,
	}
	full.Confidence.Status = emailcheck.StatusDisposable
	full.Confidence.Score = 5
	full.Confidence.IsRoleBased = true
	full.Confidence.AliasStatus = emailcheck.AliasPossible
	full.Confidence.CanonicalEmail = ptr("info@gmial.com")
	full.Provider.Name = "=HYPERLINK()"
	full.Provider.IsFree = true
	for _, c := range []struct {
		name string
		got  []string
		want string
	}{
		{"Result", resultcsv.Append([]string{"x"}, full), "x|DISPOSABLE|5|disposable_list|Info+x@gmail.com|true|true|true|'=HYPERLINK()|true|true|ALIAS_POSSIBLE|info@gmial.com"},
		{"Pending", resultcsv.Append(nil, nil), strings.Repeat("|", 11)},
		{"NotAddress", resultcsv.AppendNotAddress(nil), "INVALID_FORMAT|0|invalid_syntax||false|false|false||false|false||"},
	} {
		if g := strings.Join(c.got, "|"); g != c.want {
			t.Errorf("%s: %q, want %q", c.name, g, c.want)
		}
		if n := len(c.got) - strings.Count(c.want, "|") - 1; n != 0 {
			t.Errorf("%s: %d cells too many", c.name, n)
		}
	}
	if len(resultcsv.Columns()) != resultcsv.Width {
		t.Fatalf("%d columns, Width %d", len(resultcsv.Columns()), resultcsv.Width)
	}
}

func TestHeader(t *testing.T) {
	got := strings.Join(resultcsv.Header([]string{"Email", " Status ", "=x"}, "state"), ",")
	want := "Email, Status ,'=x,validmail_status,score,reason,did_you_mean,is_disposable,is_role_based,is_free,provider,domain_exists,mx_records,alias,canonical,state"
	if got != want {
		t.Fatalf("header %q\nwant %q", got, want)
	}
}

func TestCell(t *testing.T) {
	for in, want := range map[string]string{"": "", "ann": "ann", "=1+1": "'=1+1", "+1": "'+1", "-1": "'-1", "@x": "'@x", "\tx": "'\tx", "\rx": "'\rx", "a=b": "a=b"} {
		if got := resultcsv.Cell(in); got != want {
			t.Errorf("Cell(%q) = %q, want %q", in, got, want)
		}
	}
}

func Example() {
	r := emailcheck.Result{Email: "ann@example.org", Validations: emailcheck.Validations{Syntax: true, DomainExists: true, MXRecords: true}, Reason: emailcheck.ReasonValid}
	r.Confidence.Status, r.Confidence.Score, r.Confidence.AliasStatus = emailcheck.StatusLikely, 90, emailcheck.AliasMaybeNot
	r.Provider.Name = "Example"
	w := csv.NewWriter(os.Stdout)
	w.Write(resultcsv.Header([]string{"email"}))
	w.Write(resultcsv.Append([]string{r.Email}, &r))
	w.Flush()
	// Output:
	// email,status,score,reason,did_you_mean,is_disposable,is_role_based,is_free,provider,domain_exists,mx_records,alias,canonical
	// ann@example.org,LIKELY,90,valid,,false,false,false,Example,true,true,MAYBE_NOT_ALIAS,
}
