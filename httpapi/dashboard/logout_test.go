package dashboard_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestAnonymousLogoutKeepsNoSession posts the sign-out form without a
// session, as anyone can: it answers as a sign-out does, but stores no
// session, so such posts cannot fill the session store. A signed-in
// user's sign-out still ends the session and says so on the next page.
func TestAnonymousLogoutKeepsNoSession(t *testing.T) {
	t.Parallel()
	s := startRecorded(t, nil)
	for range 3 {
		u := newUser(t, s.base)
		a := u.do("POST", "/dashboard/logout", nil)
		if a.code != http.StatusSeeOther || !strings.HasPrefix(a.hdr.Get("Location"), "/dashboard/login") {
			t.Fatalf("anonymous sign-out: %d to %q", a.code, a.hdr.Get("Location"))
		}
		if c := a.hdr.Values("Set-Cookie"); len(c) != 0 {
			t.Errorf("anonymous sign-out set a session cookie: %q", c)
		}
	}
	u := newUser(t, s.base)
	u.signup("leaving@good.com")
	signedIn := u.session()
	out := u.do("POST", "/dashboard/logout", nil)
	if out.code != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", out.code)
	}
	if u.session() == signedIn {
		t.Error("the session token survived the sign-out")
	}
	if a := u.do("GET", out.hdr.Get("Location"), nil); a.code != http.StatusOK || !strings.Contains(a.body, "You are signed out.") {
		t.Errorf("the page after sign-out: %d, without its message", a.code)
	}
	if a := u.do("GET", "/dashboard/", nil); a.code != http.StatusSeeOther {
		t.Errorf("the console after sign-out: %d, want a redirect to sign in", a.code)
	}
}
