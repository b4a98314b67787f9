package httpapi

import (
	"testing"

	"github.com/validmail/validmail/emailcheck"
)

// A row sharing a result reads the suggestion with its own local part,
// only where the suggestion kept the validated address's.
func TestOwnSuggestion(t *testing.T) {
	sug := func(s string) *string { return &s }
	for _, c := range []struct {
		validated, suggestion, row, want string
	}{
		{"SANDRA.MOORE@yahoo.co", "SANDRA.MOORE@yahoo.com", "sandra.moore@yahoo.co", "sandra.moore@yahoo.com"},
		{"SANDRA.MOORE@yahoo.co", "SANDRA.MOORE@yahoo.com", "Sandra.Moore@YAHOO.CO", "Sandra.Moore@yahoo.com"},
		{"ann@yahoo.co", "ann@yahoo.com", "ann@yahoo.co", "ann@yahoo.com"},
		{"a.nn@gmial.com", "ann@gmail.com", "A.NN@gmial.com", "ann@gmail.com"},
		{"ann@yahoo.co", "ann@yahoo.com", "", "ann@yahoo.com"},
	} {
		res := &emailcheck.Result{Email: c.validated, DidYouMean: sug(c.suggestion)}
		got := ownSuggestion(res, c.row)
		if *got.DidYouMean != c.want || *res.DidYouMean != c.suggestion {
			t.Errorf("%s for row %q: %s (shared result now %s), want %s", c.suggestion, c.row, *got.DidYouMean, *res.DidYouMean, c.want)
		}
	}
	if ownSuggestion(nil, "a@b.c") != nil || ownSuggestion(&emailcheck.Result{Email: "a@b.co"}, "A@b.co").DidYouMean != nil {
		t.Fatal("a result without a suggestion gained one")
	}
}
