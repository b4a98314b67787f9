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
)

// TestStrangersCannotSilenceTheOwnersReset: 50 reset requests for the
// owner's address from 20 networks spend the strangers' budget, then the
// owner's own request is mailed all the same, from the browser she
// signed in with (on a network never seen), and from a new browser on a
// network she signed in from; a new browser on a new network is a
// stranger, answered alike and not mailed. The clock stands still, so no
// budget refills during the test however slow the machine.
func TestStrangersCannotSilenceTheOwnersReset(t *testing.T) {
	t.Parallel()
	b := memstore.NewBackend()
	box := &outbox{}
	now := time.Now()
	d, err := dashboard.New(dashboard.Storage{Accounts: b.Accounts, Passwords: b.Passwords, Sessions: b.Sessions, Tokens: b.Tokens},
		credits.New(b.Credits, nil), mustQueue(t, b), &dashboard.Config{
			InsecureCookies: true, Mailer: box, BaseURL: "https://validmail.example.com",
			ClientIP: func(r *http.Request) string { return r.Header.Get("X-Test-Client") },
			Now:      func() time.Time { return now },
		})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	const email = "owner@example.com"
	resets := func() int {
		n := 0
		for _, m := range box.to(email) {
			if strings.Contains(m.Subject, "new validmail password") {
				n++
			}
		}
		return n
	}
	// waitResets waits for n reset messages, then a moment more for any
	// message too many.
	waitResets := func(n int, what string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for resets() < n && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
		if got := resets(); got != n {
			t.Fatalf("%s: %d reset messages, want %d", what, got, n)
		}
	}
	owner := newUser(t, srv.URL)
	owner.do("POST", "/dashboard/signup", url.Values{"email": {email}, "password": {passphrase}}, "X-Test-Client", "192.0.2.10")
	if a := owner.do("POST", "/dashboard/login", url.Values{"email": {email}, "password": {passphrase}}, "X-Test-Client", "192.0.2.10"); a.code != http.StatusSeeOther {
		t.Fatalf("the owner's sign-in: %d", a.code)
	}
	forgot := func(u *user, client string) {
		t.Helper()
		a := u.do("POST", "/dashboard/forgot", url.Values{"email": {email}}, "X-Test-Client", client)
		if a.code != http.StatusOK || !strings.Contains(a.body, "Check your inbox") {
			t.Fatalf("forgot from %s: %d", client, a.code)
		}
	}
	// Strangers' sign-ups with her address mail her too, from a budget
	// of their own: they spend none of her reset links'.
	for i := range 10 {
		newUser(t, srv.URL).do("POST", "/dashboard/signup", url.Values{"email": {email}, "password": {passphrase}}, "X-Test-Client", fmt.Sprintf("203.1.%d.1", i))
	}
	for i := range 50 {
		forgot(newUser(t, srv.URL), fmt.Sprintf("203.0.%d.%d", i%20, i))
	}
	// The strangers' budget of reset links is 5 (the confirmation mailed
	// at sign-up spends another).
	const spent = 5
	waitResets(spent, "the strangers' requests")

	forgot(owner, "198.51.100.9") // her browser, a new network
	waitResets(spent+1, "the owner's browser")
	forgot(newUser(t, srv.URL), "192.0.2.77") // a new browser, her network
	waitResets(spent+2, "the owner's network")
	forgot(newUser(t, srv.URL), "198.51.100.10") // a stranger again
	waitResets(spent+2, "a stranger after the strangers' budget is spent")
}
