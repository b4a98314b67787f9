package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/ratelimit"
)

// TestTwoFactorStaleSetupCannotReplace: a session that opened the
// setup page before the login's second factor was turned on elsewhere
// cannot replace that factor (and mint new recovery codes) with its own
// key: replacing one is turning it off and on, which needs a proof.
func TestTwoFactorStaleSetupCannotReplace(t *testing.T) {
	for _, be := range testBackends(t) {
		t.Run(be.name, func(t *testing.T) {
			o := newTeamMail()
			clock := &testClock{}
			s := startSite(t, be.open(t), withTeamMail(o), withClock(clock))
			email := "totp-stale-" + be.name + "@example.com"
			victim := confirmedOwner(t, s.base, o, email)
			// The other session (a stolen cookie, a forgotten tab) opens
			// the setup page first: its key stays in its session.
			stale := newUser(t, s.base)
			stale.login(email, passphrase, http.StatusSeeOther)
			m := secretRe.FindStringSubmatch(stale.do("GET", "/dashboard/account/totp", nil).body)
			if m == nil {
				t.Fatal("no setup key on the stale session's page")
			}
			enableTOTP(t, victim, clock)
			clock.step()
			code, _ := totp.GenerateCode(m[1], clock.now())
			a := stale.do("POST", "/dashboard/account/totp", url.Values{"code": {code}})
			if a.code == http.StatusOK && recoveryRe.MatchString(a.body) {
				t.Errorf("a stale setup replaced the second factor without a proof and got new recovery codes")
			}
		})
	}
}

// TestTwoFactorPendingEndsWithReset: a password reset ends every
// session of the account, a pending sign-in (the old password typed,
// the code not yet) too.
func TestTwoFactorPendingEndsWithReset(t *testing.T) {
	for _, be := range testBackends(t) {
		t.Run(be.name, func(t *testing.T) {
			o := newTeamMail()
			clock := &testClock{}
			s := startSite(t, be.open(t), withTeamMail(o), withClock(clock))
			email := "totp-reset-" + be.name + "@example.com"
			owner := confirmedOwner(t, s.base, o, email)
			secret, _ := enableTOTP(t, owner, clock)
			attacker := newUser(t, s.base)
			if a := attacker.login(email, passphrase, http.StatusSeeOther); a.hdr.Get("Location") != "/dashboard/login/code" {
				t.Fatalf("no pending sign-in: %q", a.hdr.Get("Location"))
			}
			if a := newUser(t, s.base).do("POST", "/dashboard/forgot", url.Values{"email": {email}}); a.code >= 400 {
				t.Fatalf("forgot: %d", a.code)
			}
			tok := tokenOf(t, o.link(t, email, "/reset"))
			if a := newUser(t, s.base).do("POST", "/dashboard/reset", url.Values{"token": {tok}, "password": {"a brand new passphrase"}}); a.code != http.StatusSeeOther {
				t.Fatalf("reset: %d\n%s", a.code, a.body)
			}
			clock.step()
			code, _ := totp.GenerateCode(secret, clock.now())
			attacker.do("POST", "/dashboard/login/code", url.Values{"code": {code}})
			if a := attacker.do("GET", "/dashboard/keys", nil); a.code == http.StatusOK {
				t.Errorf("a sign-in begun with the old password finished after the reset")
			}
		})
	}
}

// TestTwoFactorCodeBudgetAcrossInstances: the code attempts of a login
// are counted over every instance on the backend: a stranger with the
// password gets no more guesses by spreading them. The memory backend
// serves one instance: it is left out.
func TestTwoFactorCodeBudgetAcrossInstances(t *testing.T) {
	for _, be := range testBackends(t) {
		t.Run(be.name, func(t *testing.T) {
			if be.url == "" {
				t.Skip("the memory backend serves one instance")
			}
			o := newTeamMail()
			clock := &testClock{}
			b := be.open(t)
			s1 := startSite(t, b, withTeamMail(o), withClock(clock))
			s2 := startSite(t, b, withTeamMail(newTeamMail()), withClock(clock))
			email := "totp-brute-" + be.name + "@example.com"
			owner := confirmedOwner(t, s1.base, o, email)
			enableTOTP(t, owner, clock) // one attempt of the budget's ten
			tried, limited := 1, false
			for round := 0; round < 6 && !limited; round++ {
				base := []string{s1.base, s2.base}[round%2]
				u := newUser(t, base)
				u.login(email, passphrase, http.StatusSeeOther)
				for range 4 {
					a := u.do("POST", "/dashboard/login/code", url.Values{"code": {"000000"}})
					if a.code == http.StatusTooManyRequests {
						limited = true
						break
					}
					if a.code >= 500 {
						t.Fatalf("a wrong code: %d", a.code)
					}
					tried++
				}
			}
			if !limited || tried > 10 {
				t.Errorf("%d codes tried over two instances, limited %v: want at most 10", tried, limited)
			}
		})
	}
}

// TestTwoFactorRecoveryRace: one recovery code used at once on two
// instances signs in once.
func TestTwoFactorRecoveryRace(t *testing.T) {
	for _, be := range testBackends(t) {
		t.Run(be.name, func(t *testing.T) {
			o := newTeamMail()
			clock := &testClock{}
			b := be.open(t)
			s1 := startSite(t, b, withTeamMail(o), withClock(clock))
			s2 := startSite(t, b, withTeamMail(newTeamMail()), withClock(clock))
			email := "totp-race-" + be.name + "@example.com"
			owner := confirmedOwner(t, s1.base, o, email)
			_, codes := enableTOTP(t, owner, clock)
			const n = 4
			us := make([]*user, n)
			for i := range us {
				us[i] = newUser(t, []string{s1.base, s2.base}[i%2])
				us[i].login(email, passphrase, http.StatusSeeOther)
			}
			var wg sync.WaitGroup
			res := make([]int, n)
			for i, u := range us {
				wg.Go(func() { res[i] = u.do("POST", "/dashboard/login/code", url.Values{"code": {codes[0]}}).code })
			}
			wg.Wait()
			ok := 0
			for _, c := range res {
				if c == http.StatusSeeOther {
					ok++
				}
			}
			if ok != 1 {
				t.Errorf("one recovery code used at once %d times signs in %d times: %v", n, ok, res)
			}
		})
	}
}

// TestTwoFactorStrangerInputs: a pending sign-in reaches nothing but
// the code page; cross-origin posts to the new forms are refused;
// oversize and malformed codes never make a 5xx; a member cannot change
// the team's requirement, nor an owner revoke another account's
// invitation.
func TestTwoFactorStrangerInputs(t *testing.T) {
	o := newTeamMail()
	clock := &testClock{}
	s := startSite(t, nil, withTeamMail(o), withClock(clock))
	owner := confirmedOwner(t, s.base, o, "totp-in-owner@example.com")
	enableTOTP(t, owner, clock)
	clock.step()

	pending := newUser(t, s.base)
	pending.login("totp-in-owner@example.com", passphrase, http.StatusSeeOther)
	for _, r := range []struct{ method, path string }{
		{"GET", "/dashboard/"}, {"GET", "/dashboard/keys"}, {"POST", "/dashboard/keys"}, {"GET", "/dashboard/account/totp"},
		{"POST", "/dashboard/account/totp"}, {"POST", "/dashboard/account/totp/disable"}, {"POST", "/dashboard/team/totp"},
		{"GET", "/dashboard/team"}, {"GET", "/dashboard/audit"},
	} {
		for _, hx := range []string{"", "true"} {
			a := pending.do(r.method, r.path, url.Values{"password": {passphrase}, "name": {"k"}, "permissions": {"validate"}}, "HX-Request", hx)
			if a.code < 300 || (a.code == http.StatusSeeOther && !strings.HasPrefix(a.hdr.Get("Location"), "/dashboard/login")) {
				t.Errorf("pending sign-in: %s %s (hx %q): %d to %q", r.method, r.path, hx, a.code, a.hdr.Get("Location"))
			}
		}
	}
	for _, code := range []string{strings.Repeat("1", 1<<20), "\x00\xff", "12 34 56", strings.Repeat("-", 64), "%%%", "aaaa-bbbb-cccc-dddd-eeee"} {
		if a := pending.do("POST", "/dashboard/login/code", url.Values{"code": {code}}); a.code >= 500 {
			t.Errorf("code %.20q: %d", code, a.code)
		}
	}
	for _, path := range []string{"/dashboard/login/code", "/dashboard/account/totp", "/dashboard/account/totp/disable", "/dashboard/team/totp", "/dashboard/team/invitations/x/revoke"} {
		if a := owner.do("POST", path, url.Values{"code": {"123456"}, "required": {"on"}}, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"); a.code != http.StatusForbidden {
			t.Errorf("cross-origin POST %s: %d, want 403", path, a.code)
		}
	}

	// Another account's invitation: not revocable by this owner.
	other := confirmedOwner(t, s.base, o, "totp-in-other@example.com")
	if a := other.do("POST", "/dashboard/team/invite", url.Values{"email": {"invitee@example.com"}, "role": {"member"}}); a.code != http.StatusSeeOther {
		t.Fatalf("invite: %d", a.code)
	}
	tok := tokenOf(t, o.link(t, "invitee@example.com", "/join"))
	hash := store.HashSecret(tok)
	clock.step()
	if a := owner.do("POST", "/dashboard/team/invitations/"+hash+"/revoke", url.Values{}); a.code != http.StatusNotFound && a.code != http.StatusSeeOther {
		t.Errorf("revoke another account's invitation: %d", a.code)
	}
	if a := newUser(t, s.base).do("GET", "/dashboard/join?token="+tok, nil); a.code != http.StatusOK {
		t.Errorf("another owner revoked an invitation: join page %d", a.code)
	}
	if a := other.do("GET", "/dashboard/team", nil); !strings.Contains(a.body, hash) {
		t.Logf("the team page does not name the invitation by its hash")
	}
}

// TestTwoFactorOtherPaths: a mailed sign-in link stands for the
// password only: a code is still asked; a planted session cookie is
// not the pending sign-in's; an admin can neither change the team's
// requirement nor revoke an invitation.
func TestTwoFactorOtherPaths(t *testing.T) {
	o := newTeamMail()
	clock := &testClock{}
	s := startSite(t, nil, withTeamMail(o), withClock(clock), func(dc *dashboard.Config, _ string) {
		dc.ClientIP = func(r *http.Request) string { return r.Header.Get("X-Test-Client") }
		dc.SignInFailures = ratelimit.Quota{Limit: 5, Window: 1000 * time.Hour}
		dc.SignInFailuresPerEmail = ratelimit.Quota{Limit: 50, Window: 1000 * time.Hour}
	})
	const email = "totp-paths@example.com"
	owner := confirmedOwner(t, s.base, o, email)
	secret, _ := enableTOTP(t, owner, clock)
	clock.step()

	// Session fixation: a cookie planted before the password is not the
	// one the pending sign-in lives in.
	planted := confirmedOwner(t, s.base, o, "totp-planter@example.com")
	victim := newUser(t, s.base)
	for _, c := range planted.c.Jar.Cookies(mustURL(s.base)) {
		victim.c.Jar.SetCookies(mustURL(s.base), []*http.Cookie{c})
	}
	before := victim.session()
	victim.do("POST", "/dashboard/login", url.Values{"email": {email}, "password": {passphrase}}, "X-Test-Client", "192.0.2.7")
	if before == "" || victim.session() == before {
		t.Errorf("the pending sign-in kept the planted session token (%q)", before)
	}
	if a := planted.do("GET", "/dashboard/keys", nil); a.code != http.StatusOK {
		t.Logf("the planter's own session after the victim's password: %d", a.code)
	}
	clock.step()
	code, _ := totp.GenerateCode(secret, clock.now())
	victim.do("POST", "/dashboard/login/code", url.Values{"code": {code}})
	if a := planted.do("GET", "/dashboard/account", nil); strings.Contains(a.body, email) {
		t.Errorf("the planted session is signed in as the victim")
	}

	// Sign-in link: lock the password out, then use the mailed link.
	for n := range 14 {
		attacker := newUser(t, s.base)
		for range 5 {
			attacker.do("POST", "/dashboard/login", url.Values{"email": {email}, "password": {"a wrong guess"}}, "X-Test-Client", fmt.Sprintf("198.51.%d.9", n))
		}
	}
	laptop := newUser(t, s.base)
	laptop.do("POST", "/dashboard/login", url.Values{"email": {email}, "password": {passphrase}}, "X-Test-Client", "203.0.113.50")
	tok := tokenOf(t, o.link(t, email, "/login/link"))
	a := laptop.do("POST", "/dashboard/login/link", url.Values{"token": {tok}}, "X-Test-Client", "203.0.113.50")
	if a.code != http.StatusSeeOther || a.hdr.Get("Location") != "/dashboard/login/code" {
		t.Errorf("the sign-in link: %d to %q, want the code step", a.code, a.hdr.Get("Location"))
	}
	if a := laptop.do("GET", "/dashboard/keys", nil); a.code == http.StatusOK {
		t.Errorf("the sign-in link alone reaches the keys")
	}

	// An admin and the owner's settings.
	clock.step()
	if a := owner.do("POST", "/dashboard/team/invite", url.Values{"email": {"totp-admin@example.com"}, "role": {"admin"}}); a.code != http.StatusSeeOther {
		t.Fatalf("invite: %d", a.code)
	}
	if a := owner.do("POST", "/dashboard/team/invite", url.Values{"email": {"totp-later@example.com"}, "role": {"member"}}); a.code != http.StatusSeeOther {
		t.Fatalf("invite: %d", a.code)
	}
	later := tokenOf(t, o.link(t, "totp-later@example.com", "/join"))
	admin := newUser(t, s.base)
	if a := admin.do("POST", "/dashboard/join", url.Values{"token": {tokenOf(t, o.link(t, "totp-admin@example.com", "/join"))}, "password": {"the admin's passphrase"}}); a.code != http.StatusSeeOther {
		t.Fatalf("join: %d", a.code)
	}
	for _, path := range []string{"/dashboard/team/totp", "/dashboard/team/invitations/" + store.HashSecret(later) + "/revoke"} {
		if a := admin.do("POST", path, url.Values{"required": {"on"}}); a.code != http.StatusForbidden {
			t.Errorf("an admin posts %s: %d, want 403", path, a.code)
		}
	}
	if a := newUser(t, s.base).do("GET", "/dashboard/join?token="+later, nil); a.code != http.StatusOK {
		t.Errorf("an admin revoked an invitation: %d", a.code)
	}
}
