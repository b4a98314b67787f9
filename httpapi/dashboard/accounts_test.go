package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/httpapi/dashboard/mail"
	"github.com/validmail/validmail/httpapi/dashboard/mail/mailtest"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/store/storeurl"
)

const passphrase = "a long enough passphrase"

// testBackend is a store for a test: memory, or a fresh schema or key prefix
// of the PostgreSQL and Redis servers the environment names.
type testBackend struct {
	name string
	open func(t *testing.T) *backend.Backend
	url  string // "" for memory
}

func testBackends(t *testing.T) []testBackend {
	bs := []testBackend{{name: "memory", open: func(*testing.T) *backend.Backend { return memstore.NewBackend() }}}
	for _, name := range []string{"postgres", "redis"} {
		raw := os.Getenv("VALIDMAIL_TEST_" + strings.ToUpper(name))
		if raw == "" {
			t.Logf("VALIDMAIL_TEST_%s is not set: %s is not tested", strings.ToUpper(name), name)
			continue
		}
		ns := "acct_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
		u := raw
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		if name == "postgres" {
			u += sep + "schema=" + ns
		} else {
			u += sep + "prefix=" + ns
		}
		bs = append(bs, testBackend{name: name, url: u, open: func(t *testing.T) *backend.Backend {
			if name == "postgres" {
				t.Cleanup(func() { dropSchema(t, raw, ns) })
			}
			b, err := storeurl.Open(context.Background(), u, &storeurl.Options{Init: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return b
		}})
	}
	return bs
}

// withMail sends the site's mail to srv.
func withMail(t *testing.T, srv *mailtest.Server) func(*dashboard.Config, string) {
	return func(dc *dashboard.Config, base string) {
		r, err := mail.NewRelay(mail.RelayConfig{Addr: srv.Addr, From: "validmail <no-reply@validmail.test>"})
		if err != nil {
			t.Fatal(err)
		}
		dc.Mailer, dc.BaseURL = r, base
	}
}

var linkRE = regexp.MustCompile(`https?://\S+/dashboard/(confirm|reset)\?token=[A-Za-z0-9_-]+`)

// waitLink returns the link of the first message to the address that
// holds one to path (confirm or reset).
func waitLink(t *testing.T, srv *mailtest.Server, to, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := srv.WaitFor(ctx, to, "/dashboard/"+path+"?token=")
	if err != nil {
		t.Fatal(err)
	}
	link := linkRE.FindString(m.Text())
	if link == "" {
		t.Fatalf("no link in %q", m.Text())
	}
	return link
}

// tokenOf returns the token in a mailed link.
func tokenOf(t *testing.T, link string) string {
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("token")
}

// TestAnonymousRequestsKeepNoSession: requests without a session,
// sign-out included, write none to the store.
func TestAnonymousRequestsKeepNoSession(t *testing.T) {
	b := memstore.NewBackend()
	sessions := b.Sessions.(*memstore.Sessions)
	srv := mailtest.Start(t, nil)
	s := startSite(t, b, withMail(t, srv))
	owner := newUser(t, s.base)
	owner.do("POST", "/dashboard/signup", url.Values{"email": {"known@example.com"}, "password": {passphrase}})
	anon := newUser(t, s.base)
	for range 300 {
		if a := anon.do("POST", "/dashboard/logout", nil); a.code != http.StatusSeeOther {
			t.Fatalf("sign-out without a session: %d", a.code)
		}
	}
	for _, p := range []string{"/dashboard/login", "/dashboard/login?done=signed-out", "/dashboard/signup", "/dashboard/forgot",
		"/dashboard/reset?token=x", "/dashboard/confirm?token=x", "/dashboard/", "/dashboard/nope", "/demo?email=jane@good.com"} {
		anon.do("GET", p, nil)
	}
	for _, f := range []struct {
		path string
		form url.Values
	}{
		{"/dashboard/login", url.Values{"email": {"known@example.com"}, "password": {"wrong password!"}}},
		{"/dashboard/signup", url.Values{"email": {"known@example.com"}, "password": {passphrase}}},
		{"/dashboard/signup", url.Values{"email": {"new@example.com"}, "password": {passphrase}}},
		{"/dashboard/signup", url.Values{"email": {"bad"}, "password": {"x"}}},
		{"/dashboard/forgot", url.Values{"email": {"known@example.com"}}},
		{"/dashboard/forgot", url.Values{"email": {"nobody@example.com"}}},
		{"/dashboard/confirm", url.Values{"token": {"x"}}},
		{"/dashboard/reset", url.Values{"token": {"x"}, "password": {passphrase}}},
		{"/dashboard/keys", url.Values{"name": {"x"}}},
	} {
		anon.do("POST", f.path, f.form)
	}
	if n := sessions.Len(); n != 0 {
		t.Fatalf("the store holds %d sessions after anonymous requests, want 0", n)
	}
	if c := anon.session(); c != "" {
		t.Fatalf("an anonymous client holds session cookie %q", c)
	}
	// A sign-out from a session that has ended elsewhere writes none
	// either.
	owner.c.Jar.SetCookies(mustURL(s.base), []*http.Cookie{{Name: "vm_session", Value: "made-up", Path: "/"}})
	owner.do("POST", "/dashboard/logout", nil)
	if n := sessions.Len(); n != 0 {
		t.Fatalf("the store holds %d sessions after a sign-out with an unknown cookie", n)
	}
}

// TestSessionTokensStoredHashed: the backend finds a session by the
// hash of the cookie's token, never by the token.
func TestSessionTokensStoredHashed(t *testing.T) {
	for _, be := range testBackends(t) {
		t.Run(be.name, func(t *testing.T) {
			b := be.open(t)
			s := startSite(t, b)
			u := newUser(t, s.base)
			u.signup("hashed-" + be.name + "@example.com")
			tok := u.session()
			if tok == "" {
				t.Fatal("no session cookie after sign-in")
			}
			ctx := context.Background()
			if _, found, err := b.Sessions.FindSession(ctx, tok); found || err != nil {
				t.Fatalf("the session is stored under its token: found %v, %v", found, err)
			}
			if _, found, err := b.Sessions.FindSession(ctx, store.HashSecret(tok)); !found || err != nil {
				t.Fatalf("the session is not stored under the hash of its token: found %v, %v", found, err)
			}
			if be.name == "postgres" {
				conn, err := pgx.Connect(ctx, os.Getenv("VALIDMAIL_TEST_POSTGRES"))
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close(ctx)
				schema := strings.TrimPrefix(be.url[strings.Index(be.url, "schema="):], "schema=")
				var n int
				err = conn.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema}.Sanitize()+`.sessions WHERE id = $1 OR data::text LIKE '%' || $1 || '%'`, tok).Scan(&n)
				if err != nil || n != 0 {
					t.Fatalf("rows holding the token: %d, %v", n, err)
				}
			}
		})
	}
}

// TestPasswordChangeEndsOtherSessions: changing the password keeps the
// changer's session and ends every other of the account.
func TestPasswordChangeEndsOtherSessions(t *testing.T) {
	for _, be := range testBackends(t) {
		t.Run(be.name, func(t *testing.T) {
			b := be.open(t)
			s := startSite(t, b)
			email := "change-" + be.name + "@example.com"
			one, two, other := newUser(t, s.base), newUser(t, s.base), newUser(t, s.base)
			one.signup(email)
			two.login(email, passphrase, http.StatusSeeOther)
			other.signup("bystander-" + be.name + "@example.com")
			before := one.session()

			if a := one.do("POST", "/dashboard/account/password", url.Values{"current": {"not the password"}, "password": {"a brand new passphrase"}}); a.code != http.StatusUnprocessableEntity {
				t.Fatalf("a wrong current password: %d", a.code)
			}
			if a := two.do("GET", "/dashboard/", nil); a.code != http.StatusOK {
				t.Fatalf("a refused change ended a session: %d", a.code)
			}
			a := one.do("POST", "/dashboard/account/password", url.Values{"current": {passphrase}, "password": {"a brand new passphrase"}})
			if a.code != http.StatusSeeOther {
				t.Fatalf("password change: %d\n%s", a.code, a.body)
			}
			if page := one.do("GET", "/dashboard/account", nil); page.code != http.StatusOK || !strings.Contains(page.body, "Every other session") {
				t.Fatalf("the changer's session after the change: %d", page.code)
			}
			if one.session() == before {
				t.Error("the changer's session token was not renewed")
			}
			if a := two.do("GET", "/dashboard/", nil); a.code != http.StatusSeeOther {
				t.Fatalf("another session of the account after the change: %d, want the sign-in page", a.code)
			}
			if a := other.do("GET", "/dashboard/", nil); a.code != http.StatusOK {
				t.Fatalf("another account's session after the change: %d", a.code)
			}
			two.login(email, passphrase, http.StatusUnauthorized)
			two.login(email, "a brand new passphrase", http.StatusSeeOther)
		})
	}
}

// TestSignupConfirmation: sign-up answers the same for a new and a known
// email; the mail tells them apart; credits arrive with the
// confirmation, whose link works once.
func TestSignupConfirmation(t *testing.T) {
	for _, be := range testBackends(t) {
		t.Run(be.name, func(t *testing.T) {
			srv := mailtest.Start(t, nil)
			b := be.open(t)
			s := startSite(t, b, withMail(t, srv))
			email := "confirm-" + be.name + "@example.com"
			u := newUser(t, s.base)
			signup := func() answer {
				return newUser(t, s.base).do("POST", "/dashboard/signup", url.Values{"email": {email}, "password": {passphrase}})
			}
			first, second := signup(), signup()
			if first.code != http.StatusOK || second.code != first.code || second.body != first.body {
				t.Fatalf("sign-up of a new email: %d; of a known one: %d; same page: %v", first.code, second.code, first.body == second.body)
			}
			link := waitLink(t, srv, email, "confirm")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := srv.WaitFor(ctx, email, "you already have an account"); err != nil {
				t.Fatalf("the owner of the known email was not told: %v", err)
			}

			// Unconfirmed: signed in, told to confirm, no credits, no keys
			// or bulk.
			u.login(email, passphrase, http.StatusSeeOther)
			page := u.do("GET", "/dashboard/", nil)
			if page.code != 200 || !strings.Contains(page.body, "Confirm your email") || !strings.Contains(page.body, `id="balance">0<`) {
				t.Fatalf("an unconfirmed account's overview: %d\n%s", page.code, page.body)
			}
			if a := u.do("POST", "/dashboard/keys", url.Values{"name": {"k"}, "permissions": {"validate"}}); a.code != http.StatusForbidden {
				t.Fatalf("an unconfirmed account creates a key: %d", a.code)
			}
			if a := u.do("POST", "/dashboard/bulk", url.Values{"emails": {"a@good.com"}}); a.code != http.StatusForbidden {
				t.Fatalf("an unconfirmed account uses the bulk tool: %d", a.code)
			}

			// The link opens a page; only its form confirms.
			tok := tokenOf(t, link)
			if a := u.do("GET", strings.TrimPrefix(link, s.base), nil); a.code != 200 || !strings.Contains(a.body, tok) {
				t.Fatalf("the confirmation page: %d", a.code)
			}
			if page := u.do("GET", "/dashboard/", nil); !strings.Contains(page.body, `id="balance">0<`) {
				t.Fatal("opening the link granted the credits")
			}
			// Signed in here: no password asked; the first key is shown.
			if a := u.do("POST", "/dashboard/confirm", url.Values{"token": {tok}}); a.code != http.StatusOK || !strings.Contains(a.body, `id="secret-value"`) || !strings.Contains(a.body, "<strong>300</strong>") {
				t.Fatalf("confirmation: %d\n%s", a.code, a.body)
			}
			page = u.do("GET", "/dashboard/", nil)
			if !strings.Contains(page.body, `id="balance">300<`) || strings.Contains(page.body, "Send the link again") {
				t.Fatalf("after confirmation:\n%s", page.body)
			}
			if a := newUser(t, s.base).do("POST", "/dashboard/confirm", url.Values{"token": {tok}}); a.code != http.StatusBadRequest {
				t.Fatalf("the link used twice: %d", a.code)
			}
			if page := u.do("GET", "/dashboard/", nil); !strings.Contains(page.body, `id="balance">300<`) {
				t.Fatal("a second confirmation changed the balance")
			}
			if a := u.do("POST", "/dashboard/keys", url.Values{"name": {"k"}, "permissions": {"validate"}}); a.code != http.StatusCreated {
				t.Fatalf("a confirmed account creates a key: %d", a.code)
			}
		})
	}
}

// TestConfirmationNeedsPassword: a link followed in a browser not signed
// in to the account confirms only with the account's password, so that
// an account created with someone else's address stays unconfirmed when
// that someone clicks; a wrong password leaves the link usable.
func TestConfirmationNeedsPassword(t *testing.T) {
	srv := mailtest.Start(t, nil)
	s := startSite(t, nil, withMail(t, srv))
	const email = "victim@example.com"
	newUser(t, s.base).do("POST", "/dashboard/signup", url.Values{"email": {email}, "password": {"the squatter's passphrase"}})
	tok := tokenOf(t, waitLink(t, srv, email, "confirm"))
	victim := newUser(t, s.base)
	if a := victim.do("GET", "/dashboard/confirm?token="+tok, nil); !strings.Contains(a.body, `id="password"`) {
		t.Fatal("the confirmation page asks no password of a signed-out browser")
	}
	for _, pw := range []string{"", "a guess at the passphrase"} {
		a := victim.do("POST", "/dashboard/confirm", url.Values{"token": {tok}, "password": {pw}})
		if a.code != http.StatusUnprocessableEntity || !strings.Contains(a.body, `aria-invalid="true"`) || !strings.Contains(a.body, tok) {
			t.Fatalf("confirmation with password %q: %d", pw, a.code)
		}
	}
	if victim.session() != "" {
		t.Fatal("a refused confirmation signed the browser in")
	}
	squatter := newUser(t, s.base)
	squatter.login(email, "the squatter's passphrase", http.StatusSeeOther)
	if page := squatter.do("GET", "/dashboard/", nil); !strings.Contains(page.body, `id="balance">0<`) {
		t.Fatal("refused confirmations granted credits")
	}
	// The owner of the password, signed out, confirms and is signed in.
	owner := newUser(t, s.base)
	a := owner.do("POST", "/dashboard/confirm", url.Values{"token": {tok}, "password": {"the squatter's passphrase"}})
	if a.code != http.StatusOK || !strings.Contains(a.body, "<strong>300</strong>") || owner.session() == "" {
		t.Fatalf("confirmation with the password: %d\n%s", a.code, a.body)
	}
}

// TestForgotPassword: the same answer for any address; the link sets a
// new password once and ends every session of the account.
func TestForgotPassword(t *testing.T) {
	for _, be := range testBackends(t) {
		t.Run(be.name, func(t *testing.T) {
			srv := mailtest.Start(t, nil)
			b := be.open(t)
			s := startSite(t, b, withMail(t, srv))
			email := "forgot-" + be.name + "@example.com"
			owner := newUser(t, s.base)
			owner.do("POST", "/dashboard/signup", url.Values{"email": {email}, "password": {passphrase}})
			owner.login(email, passphrase, http.StatusSeeOther)
			laptop := newUser(t, s.base)
			laptop.login(email, passphrase, http.StatusSeeOther)

			stranger := "nobody-" + be.name + "@example.com"
			known := newUser(t, s.base).do("POST", "/dashboard/forgot", url.Values{"email": {email}})
			unknown := newUser(t, s.base).do("POST", "/dashboard/forgot", url.Values{"email": {stranger}})
			if known.code != 200 || unknown.code != 200 || strings.ReplaceAll(unknown.body, stranger, email) != known.body {
				t.Fatalf("forgot for a known email: %d; for an unknown one: %d; same page: %v", known.code, unknown.code,
					strings.ReplaceAll(unknown.body, stranger, email) == known.body)
			}
			link := waitLink(t, srv, email, "reset")
			if !strings.HasPrefix(link, s.base+"/dashboard/reset?token=") {
				t.Fatalf("reset link %q is not on the console's origin %s", link, s.base)
			}
			for _, m := range srv.Messages() {
				if m.To[0] == stranger {
					t.Fatal("an address without an account got mail")
				}
			}
			tok := tokenOf(t, link)
			reset := newUser(t, s.base)
			if a := reset.do("GET", strings.TrimPrefix(link, s.base), nil); a.code != 200 || a.hdr.Get("Cache-Control") != "no-store" {
				t.Fatalf("the reset page: %d, Cache-Control %q", a.code, a.hdr.Get("Cache-Control"))
			}
			if a := reset.do("POST", "/dashboard/reset", url.Values{"token": {tok}, "password": {"short"}}); a.code != http.StatusUnprocessableEntity {
				t.Fatalf("a too short password: %d", a.code)
			}
			a := reset.do("POST", "/dashboard/reset", url.Values{"token": {tok}, "password": {"a brand new passphrase"}})
			if a.code != http.StatusSeeOther || !strings.Contains(a.hdr.Get("Location"), "done=reset") {
				t.Fatalf("reset (after a refused password, with the same link): %d %s", a.code, a.hdr.Get("Location"))
			}
			for name, u := range map[string]*user{"owner": owner, "laptop": laptop} {
				if a := u.do("GET", "/dashboard/", nil); a.code != http.StatusSeeOther {
					t.Errorf("the %s's session after the reset: %d, want the sign-in page", name, a.code)
				}
			}
			if a := reset.do("POST", "/dashboard/reset", url.Values{"token": {tok}, "password": {"yet another passphrase"}}); a.code != http.StatusBadRequest {
				t.Fatalf("the link used twice: %d", a.code)
			}
			owner.login(email, passphrase, http.StatusUnauthorized)
			// The reset proved the address: the account is confirmed, and
			// its first sign-in shows its first key.
			owner.login(email, "a brand new passphrase", http.StatusOK)
			if page := owner.do("GET", "/dashboard/", nil); !strings.Contains(page.body, `id="balance">300<`) {
				t.Fatal("the reset did not confirm the account")
			}
		})
	}
}

// TestMailLinksIgnoreHost: a request's Host header does not choose where
// a mailed link points.
func TestMailLinksIgnoreHost(t *testing.T) {
	srv := mailtest.Start(t, nil)
	s := startSite(t, nil, withMail(t, srv))
	newUser(t, s.base).do("POST", "/dashboard/signup", url.Values{"email": {"host@example.com"}, "password": {passphrase}})
	waitLink(t, srv, "host@example.com", "confirm")
	req, _ := http.NewRequest("POST", s.base+"/dashboard/forgot", strings.NewReader("email=host%40example.com"))
	req.Host = "evil.example"
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if link := waitLink(t, srv, "host@example.com", "reset"); !strings.HasPrefix(link, s.base+"/") {
		t.Fatalf("the reset link points to %s", link)
	}
}

// A throwaway address opens no account, whether or not its domain
// resolves: its owner would take the sign-up credits and be gone. The
// answer names the email field and reads the same for every such address.
func TestSignupRefusesDisposable(t *testing.T) {
	s := startSite(t, nil)
	for _, email := range []string{"x@mailinator.com", "Someone@Guerrillamail.com", "y@sub.yopmail.com"} {
		a := newUser(t, s.base).do("POST", "/dashboard/signup", url.Values{"email": {email}, "password": {passphrase}})
		if a.code != http.StatusUnprocessableEntity || !strings.Contains(a.body, "disposable email service") {
			t.Errorf("sign-up of %s: %d, want 422 naming the disposable service\n%s", email, a.code, a.body)
		}
	}
	if a := newUser(t, s.base).do("POST", "/dashboard/signup", url.Values{"email": {"jane@good.com"}, "password": {passphrase}}); a.code != http.StatusOK {
		t.Errorf("sign-up of an ordinary address: %d\n%s", a.code, a.body)
	}
}
