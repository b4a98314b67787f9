package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestTwoFactorTeamRequirementOff: an owner stops requiring a second
// factor of the team only with a proof (a current code, a recovery code
// or the password), as turning their own off needs: a stolen session
// alone cannot weaken the team.
func TestTwoFactorTeamRequirementOff(t *testing.T) {
	for _, be := range testBackends(t) {
		t.Run(be.name, func(t *testing.T) {
			o := newTeamMail()
			clock := &testClock{}
			s := startSite(t, be.open(t), withTeamMail(o), withClock(clock))
			owner := confirmedOwner(t, s.base, o, "totp-off-"+be.name+"@example.com")
			_, codes := enableTOTP(t, owner, clock)
			if a := owner.do("POST", "/dashboard/team/totp", url.Values{"required": {"on"}}); a.code != http.StatusSeeOther {
				t.Fatalf("require: %d", a.code)
			}
			required := func() bool {
				return strings.Contains(owner.do("GET", "/dashboard/team", nil).body, `value="on" checked`)
			}
			for _, tc := range []struct {
				name string
				form url.Values
				want int
			}{
				{"no proof", url.Values{}, http.StatusUnprocessableEntity},
				{"a wrong password", url.Values{"password": {"not the passphrase"}}, http.StatusUnprocessableEntity},
				{"a wrong code", url.Values{"code": {"000000"}}, http.StatusUnprocessableEntity},
				{"a code too long", url.Values{"code": {strings.Repeat("1", 5000)}}, http.StatusUnprocessableEntity},
				{"a recovery code", url.Values{"code": {codes[0]}}, http.StatusSeeOther},
			} {
				if !required() {
					if a := owner.do("POST", "/dashboard/team/totp", url.Values{"required": {"on"}}); a.code != http.StatusSeeOther {
						t.Fatalf("require again: %d", a.code)
					}
				}
				a := owner.do("POST", "/dashboard/team/totp", tc.form)
				if a.code != tc.want {
					t.Errorf("turning the requirement off with %s: %d, want %d", tc.name, a.code, tc.want)
				}
				if still := required(); still != (tc.want != http.StatusSeeOther) {
					t.Errorf("after turning it off with %s, required %v", tc.name, still)
				}
			}
			if !required() {
				owner.do("POST", "/dashboard/team/totp", url.Values{"required": {"on"}})
			}
			if a := owner.do("POST", "/dashboard/team/totp", url.Values{"password": {passphrase}}); a.code != http.StatusSeeOther || required() {
				t.Errorf("turning the requirement off with the password: %d, required %v", a.code, required())
			}
		})
	}
}

// TestTwoFactorTeamRequirementReachesSessions: a member signed in before
// the owner required a second factor is sent to add one at their next
// request, on any instance, not only at their next sign-in; with one
// added, they go on.
func TestTwoFactorTeamRequirementReachesSessions(t *testing.T) {
	for _, be := range testBackends(t) {
		t.Run(be.name, func(t *testing.T) {
			o := newTeamMail()
			clock := &testClock{}
			b := be.open(t)
			s := startSite(t, b, withTeamMail(o), withClock(clock))
			other := s
			if be.url != "" {
				other = startSite(t, b, withTeamMail(newTeamMail()), withClock(clock))
			}
			owner := confirmedOwner(t, s.base, o, "totp-late-"+be.name+"@example.com")
			memberEmail := "totp-late-member-" + be.name + "@example.com"
			if a := owner.do("POST", "/dashboard/team/invite", url.Values{"email": {memberEmail}, "role": {"admin"}}); a.code != http.StatusSeeOther {
				t.Fatalf("invite: %d", a.code)
			}
			tok := tokenOf(t, o.link(t, memberEmail, "/join"))
			member := newUser(t, other.base)
			if a := member.do("POST", "/dashboard/join", url.Values{"token": {tok}, "password": {"the member's own passphrase"}}); a.code != http.StatusSeeOther {
				t.Fatalf("join: %d", a.code)
			}
			if a := member.do("GET", "/dashboard/keys", nil); a.code != http.StatusOK {
				t.Fatalf("keys before the requirement: %d", a.code)
			}
			enableTOTP(t, owner, clock)
			if a := owner.do("POST", "/dashboard/team/totp", url.Values{"required": {"on"}}); a.code != http.StatusSeeOther {
				t.Fatalf("require: %d", a.code)
			}
			clock.step() // past what an instance caches of the requirement
			for _, r := range []struct{ method, path string }{{"GET", "/dashboard/keys"}, {"POST", "/dashboard/keys"}} {
				a := member.do(r.method, r.path, url.Values{"name": {"x"}, "permissions": {"validate"}})
				if a.code != http.StatusForbidden && (a.code != http.StatusSeeOther || a.hdr.Get("Location") != "/dashboard/account/totp") {
					t.Errorf("%s %s after the requirement, without a second factor: %d to %q", r.method, r.path, a.code, a.hdr.Get("Location"))
				}
			}
			enableTOTP(t, member, clock)
			if a := member.do("GET", "/dashboard/keys", nil); a.code != http.StatusOK {
				t.Errorf("keys after adding a second factor: %d", a.code)
			}
		})
	}
}
