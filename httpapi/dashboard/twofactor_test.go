package dashboard_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/validmail/validmail/httpapi/dashboard"
)

// testClock is a console clock the test moves on, a time step at a
// time, so that each sign-in has a code of its own.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// step moves the clock to the next 30-second time step.
func (c *testClock) step() { c.offset.Add(int64(30 * time.Second)) }

func withClock(c *testClock) func(*dashboard.Config, string) {
	return func(dc *dashboard.Config, _ string) { dc.Now = c.now }
}

var (
	secretRe   = regexp.MustCompile(`<code id="totp-secret">([A-Z2-7]+)</code>`)
	recoveryRe = regexp.MustCompile(`<li><code>([a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4})</code></li>`)
)

// enableTOTP turns on the signed-in login's second factor: its secret
// and recovery codes.
func enableTOTP(t *testing.T, u *user, clock *testClock) (string, []string) {
	t.Helper()
	setup := u.do("GET", "/dashboard/account/totp", nil)
	m := secretRe.FindStringSubmatch(setup.body)
	if setup.code != http.StatusOK || m == nil || !strings.Contains(setup.body, `src="data:image/png;base64,`) ||
		!strings.Contains(setup.body, `href="otpauth://totp/validmail:`) {
		t.Fatalf("setup page: %d, no secret, QR code or URI\n%s", setup.code, setup.body)
	}
	if a := u.do("POST", "/dashboard/account/totp", url.Values{"code": {"000000"}}); a.code != http.StatusUnprocessableEntity {
		t.Errorf("a wrong code confirms: %d", a.code)
	}
	code, _ := totp.GenerateCode(m[1], clock.now())
	done := u.do("POST", "/dashboard/account/totp", url.Values{"code": {code}})
	codes := recoveryRe.FindAllStringSubmatch(done.body, -1)
	if done.code != http.StatusOK || len(codes) != 10 {
		t.Fatalf("confirm: %d, %d recovery codes\n%s", done.code, len(codes), done.body)
	}
	var out []string
	for _, c := range codes {
		out = append(out, c[1])
	}
	if a := u.do("GET", "/dashboard/account/totp", nil); !strings.Contains(a.body, "Two-factor sign-in is on") || recoveryRe.MatchString(a.body) {
		t.Errorf("the page after: not on, or the recovery codes shown again")
	}
	return m[1], out
}

// codeStep signs in with the password and answers the code step with
// code, returning the code step's answer.
func codeStep(t *testing.T, base, email, password, code string) (*user, answer) {
	t.Helper()
	u := newUser(t, base)
	a := u.login(email, password, http.StatusSeeOther)
	if loc := a.hdr.Get("Location"); loc != "/dashboard/login/code" {
		t.Fatalf("sign-in with a second factor goes to %q", loc)
	}
	if a := u.do("GET", "/dashboard/", nil); a.code != http.StatusSeeOther || !strings.HasPrefix(a.hdr.Get("Location"), "/dashboard/login") {
		t.Fatalf("the password alone signs in: %d", a.code)
	}
	if a := u.do("GET", "/dashboard/login/code", nil); a.code != http.StatusOK || !strings.Contains(a.body, `name="code"`) {
		t.Fatalf("code page: %d", a.code)
	}
	return u, u.do("POST", "/dashboard/login/code", url.Values{"code": {code}})
}

// TestTwoFactorSignIn: an owner turns on TOTP with a current code and
// gets ten recovery codes; a sign-in then needs a code after the
// password, each code once (a replay within its step is refused), or a
// recovery code, once; turning it off needs the password; the audit log
// records both.
func TestTwoFactorSignIn(t *testing.T) {
	for _, be := range testBackends(t) {
		t.Run(be.name, func(t *testing.T) {
			o := newTeamMail()
			clock := &testClock{}
			s := startSite(t, be.open(t), withTeamMail(o), withClock(clock))
			email := "totp-owner-" + be.name + "@example.com"
			owner := confirmedOwner(t, s.base, o, email)
			secret, codes := enableTOTP(t, owner, clock)

			// The code that confirmed it is used: refused within its step.
			used, _ := totp.GenerateCode(secret, clock.now())
			if _, a := codeStep(t, s.base, email, passphrase, used); a.code != http.StatusUnauthorized {
				t.Errorf("the confirming code signs in: %d", a.code)
			}
			clock.step()
			code, _ := totp.GenerateCode(secret, clock.now())
			u, a := codeStep(t, s.base, email, passphrase, code)
			if a.code != http.StatusSeeOther {
				t.Fatalf("sign-in with a current code: %d\n%s", a.code, a.body)
			}
			if a := u.do("GET", "/dashboard/keys", nil); a.code != http.StatusOK {
				t.Errorf("signed in with a code, keys page: %d", a.code)
			}
			if _, a := codeStep(t, s.base, email, passphrase, code); a.code != http.StatusUnauthorized {
				t.Errorf("a replayed code signs in: %d", a.code)
			}
			// A recovery code, typed in upper case, once.
			if _, a := codeStep(t, s.base, email, passphrase, strings.ToUpper(codes[3])); a.code != http.StatusSeeOther {
				t.Errorf("sign-in with a recovery code: %d\n%s", a.code, a.body)
			}
			if _, a := codeStep(t, s.base, email, passphrase, codes[3]); a.code != http.StatusUnauthorized {
				t.Errorf("a used recovery code signs in: %d", a.code)
			}
			if a := u.do("GET", "/dashboard/account/totp", nil); !strings.Contains(a.body, `<strong id="codes-left">9</strong>`) {
				t.Errorf("recovery codes left after one used: not 9")
			}
			// Off with a wrong password: refused; with the right one: off.
			if a := u.do("POST", "/dashboard/account/totp/disable", url.Values{"password": {"not the password"}}); a.code != http.StatusUnprocessableEntity {
				t.Errorf("disable with a wrong password: %d", a.code)
			}
			if a := u.do("POST", "/dashboard/account/totp/disable", url.Values{"password": {passphrase}}); a.code != http.StatusSeeOther {
				t.Errorf("disable with the password: %d", a.code)
			}
			if a := newUser(t, s.base).login(email, passphrase, http.StatusSeeOther); a.hdr.Get("Location") == "/dashboard/login/code" {
				t.Errorf("a code is asked after two-factor sign-in was turned off")
			}
			log := html.UnescapeString(u.do("GET", "/dashboard/audit", nil).body)
			for _, want := range []string{"totp.enabled", "totp.disabled"} {
				if !strings.Contains(log, want) {
					t.Errorf("the audit log lacks %s", want)
				}
			}
		})
	}
}

// TestTwoFactorTeam: an owner requires a second factor only with one of
// their own; a member joining such a team is sent to add one and may do
// nothing else until then; the member's sign-in then asks a code, and
// five wrong codes end the pending sign-in.
func TestTwoFactorTeam(t *testing.T) {
	for _, be := range testBackends(t) {
		t.Run(be.name, func(t *testing.T) {
			o := newTeamMail()
			clock := &testClock{}
			s := startSite(t, be.open(t), withTeamMail(o), withClock(clock))
			ownerEmail := "totp-team-" + be.name + "@example.com"
			owner := confirmedOwner(t, s.base, o, ownerEmail)
			owner.do("POST", "/dashboard/team/totp", url.Values{"required": {"on"}})
			if a := owner.do("GET", "/dashboard/team", nil); strings.Contains(a.body, `value="on" checked`) {
				t.Fatalf("the team requires a second factor of an owner without one")
			}
			enableTOTP(t, owner, clock)
			if a := owner.do("POST", "/dashboard/team/totp", url.Values{"required": {"on"}}); a.code != http.StatusSeeOther {
				t.Fatalf("require: %d", a.code)
			}
			if a := owner.do("GET", "/dashboard/team", nil); !strings.Contains(a.body, `value="on" checked`) {
				t.Fatalf("the requirement is not shown")
			}

			memberEmail := "totp-member-" + be.name + "@example.com"
			if a := owner.do("POST", "/dashboard/team/invite", url.Values{"email": {memberEmail}, "role": {"admin"}}); a.code != http.StatusSeeOther {
				t.Fatalf("invite: %d", a.code)
			}
			tok := tokenOf(t, o.link(t, memberEmail, "/join"))
			member := newUser(t, s.base)
			const memberPass = "the member's own passphrase"
			a := member.do("POST", "/dashboard/join", url.Values{"token": {tok}, "password": {memberPass}})
			if a.code != http.StatusSeeOther || a.hdr.Get("Location") != "/dashboard/account/totp" {
				t.Fatalf("join: %d to %q, want the second factor's setup", a.code, a.hdr.Get("Location"))
			}
			for _, r := range []struct{ method, path string }{{"GET", "/dashboard/keys"}, {"GET", "/dashboard/"}, {"POST", "/dashboard/keys"}} {
				a := member.do(r.method, r.path, url.Values{"name": {"x"}, "permissions": {"validate"}})
				if a.code != http.StatusForbidden && (a.code != http.StatusSeeOther || a.hdr.Get("Location") != "/dashboard/account/totp") {
					t.Errorf("%s %s before adding a second factor: %d to %q", r.method, r.path, a.code, a.hdr.Get("Location"))
				}
			}
			if a := member.do("POST", "/dashboard/account/totp/disable", url.Values{"password": {memberPass}}); a.code == http.StatusSeeOther {
				t.Errorf("a member disables nothing into a required second factor")
			}
			if a := owner.do("GET", "/dashboard/team", nil); strings.Count(a.body, `<td data-label="Two-factor">on</td>`) != 1 ||
				strings.Count(a.body, `<td data-label="Two-factor">off</td>`) != 1 {
				t.Errorf("the team page does not say the owner's second factor is on and the member's off")
			}
			secret, _ := enableTOTP(t, member, clock)
			if a := owner.do("GET", "/dashboard/team", nil); strings.Count(a.body, `<td data-label="Two-factor">on</td>`) != 2 {
				t.Errorf("the team page does not say the member's second factor is on")
			}
			if a := member.do("GET", "/dashboard/keys", nil); a.code != http.StatusOK {
				t.Errorf("keys after adding a second factor: %d", a.code)
			}
			if a := member.do("POST", "/dashboard/account/totp/disable", url.Values{"password": {memberPass}}); a.code != http.StatusConflict {
				t.Errorf("disable while the team requires it: %d, want 409", a.code)
			}

			clock.step()
			code, _ := totp.GenerateCode(secret, clock.now())
			if _, a := codeStep(t, s.base, memberEmail, memberPass, code); a.code != http.StatusSeeOther || a.hdr.Get("Location") != "/dashboard/" {
				t.Errorf("member's sign-in with a code: %d to %q", a.code, a.hdr.Get("Location"))
			}
			u, a := codeStep(t, s.base, memberEmail, memberPass, "111111")
			for i := 1; i < 5; i++ {
				if a.code != http.StatusUnauthorized {
					t.Fatalf("wrong code %d: %d", i, a.code)
				}
				a = u.do("POST", "/dashboard/login/code", url.Values{"code": {"111111"}})
			}
			if a.code != http.StatusSeeOther || a.hdr.Get("Location") != "/dashboard/login?done=code-expired" {
				t.Errorf("the fifth wrong code: %d to %q", a.code, a.hdr.Get("Location"))
			}
			clock.step()
			code, _ = totp.GenerateCode(secret, clock.now())
			if a := u.do("POST", "/dashboard/login/code", url.Values{"code": {code}}); a.code != http.StatusSeeOther || a.hdr.Get("Location") != "/dashboard/login?done=code-expired" {
				t.Errorf("a right code after the pending sign-in ended: %d to %q", a.code, a.hdr.Get("Location"))
			}
			log := html.UnescapeString(owner.do("GET", "/dashboard/audit", nil).body)
			for _, want := range []string{"team.totp_required", "admin " + memberEmail} {
				if !strings.Contains(log, want) {
					t.Errorf("the audit log lacks %s", want)
				}
			}
		})
	}
}
