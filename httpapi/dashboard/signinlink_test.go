package dashboard_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/store/ratelimit"
)

// TestNewBrowserSignsInByMail: 70 wrong passwords from 14 networks fill
// the email's cap of failures from everywhere; the owner, in a browser
// her account has never seen, then signs in by mail: her right password
// gets the same answer as a wrong one, and a link mailed to her that
// works once, in that browser only.
func TestNewBrowserSignsInByMail(t *testing.T) {
	t.Parallel()
	b := memstore.NewBackend()
	box := &outbox{}
	d, err := dashboard.New(dashboard.Storage{Accounts: b.Accounts, Passwords: b.Passwords, Sessions: b.Sessions, Tokens: b.Tokens},
		credits.New(b.Credits, nil), mustQueue(t, b), &dashboard.Config{
			InsecureCookies: true, Mailer: box, BaseURL: "https://validmail.example.com",
			ClientIP:               func(r *http.Request) string { return r.Header.Get("X-Test-Client") },
			SignInFailures:         ratelimit.Quota{Limit: 5, Window: 1000 * time.Hour},
			SignInFailuresPerEmail: ratelimit.Quota{Limit: 50, Window: 1000 * time.Hour},
		})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	const email = "owner@example.com"
	login := func(u *user, pw, client string) answer {
		return u.do("POST", "/dashboard/login", url.Values{"email": {email}, "password": {pw}}, "X-Test-Client", client)
	}
	newUser(t, srv.URL).do("POST", "/dashboard/signup", url.Values{"email": {email}, "password": {passphrase}}, "X-Test-Client", "192.0.2.1")
	codes := map[int]int{}
	for n := range 14 {
		attacker := newUser(t, srv.URL)
		for range 5 {
			codes[login(attacker, "a wrong guess", fmt.Sprintf("198.51.%d.9", n)).code]++
		}
	}
	if codes[http.StatusUnauthorized] != 50 || codes[http.StatusOK] != 20 {
		t.Fatalf("70 guesses from 14 networks: %v, want 50 wrong and 20 answered by mail", codes)
	}
	links := func() []string {
		var ls []string
		for _, m := range box.to(email) {
			if i := strings.Index(m.Body, "/dashboard/login/link?token="); i >= 0 {
				ls = append(ls, strings.Fields(m.Body[i:])[0])
			}
		}
		return ls
	}
	if n := len(links()); n != 0 {
		t.Fatalf("wrong guesses mailed %d sign-in links", n)
	}

	laptop := newUser(t, srv.URL)
	right := login(laptop, passphrase, "203.0.113.50")
	wrong := login(newUser(t, srv.URL), "another wrong guess", "203.0.113.51")
	if right.code != http.StatusOK || right.body != wrong.body || laptop.session() != "" {
		t.Fatalf("the right password: %d, the wrong one: %d, same page: %v, signed in: %v", right.code, wrong.code, right.body == wrong.body, laptop.session() != "")
	}
	waitCount(t, func() int { return len(links()) }, 1)
	time.Sleep(50 * time.Millisecond)
	if n := len(links()); n != 1 {
		t.Fatalf("%d sign-in links mailed, want the right password's only", n)
	}
	link := links()[0]
	tok := strings.TrimPrefix(link, "/dashboard/login/link?token=")

	// Another browser (a scanner, a stranger with the mail) opens the
	// page but cannot use the link.
	other := newUser(t, srv.URL)
	if a := other.do("GET", link, nil); a.code != http.StatusOK || !strings.Contains(a.body, tok) {
		t.Fatalf("the link's page: %d", a.code)
	}
	if a := other.do("POST", "/dashboard/login/link", url.Values{"token": {tok}}); a.code != http.StatusBadRequest || other.session() != "" {
		t.Fatalf("the link in another browser: %d", a.code)
	}
	// Her browser: signed in, and a known device from now on.
	if a := laptop.do("POST", "/dashboard/login/link", url.Values{"token": {tok}}); a.code != http.StatusSeeOther || laptop.session() == "" {
		t.Fatalf("the link in her browser: %d", a.code)
	}
	if a := laptop.do("GET", "/dashboard/", nil); a.code != http.StatusOK {
		t.Fatalf("her overview: %d", a.code)
	}
	if a := laptop.do("POST", "/dashboard/login/link", url.Values{"token": {tok}}); a.code != http.StatusBadRequest {
		t.Fatalf("the link used twice: %d", a.code)
	}
	laptop.do("POST", "/dashboard/logout", nil)
	if a := login(laptop, passphrase, "203.0.113.50"); a.code != http.StatusSeeOther {
		t.Fatalf("her browser signs in by password after the link: %d", a.code)
	}
}
