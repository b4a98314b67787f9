package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/validmail/validmail/store/memstore"
)

// joinAs accepts the newest invitation mailed to email with password.
func joinAs(t *testing.T, base string, o *teamMail, email, password string) answer {
	t.Helper()
	tok := tokenOf(t, o.link(t, email, "/join"))
	return newUser(t, base).do("POST", "/dashboard/join", url.Values{"token": {tok}, "password": {password}})
}

// TestTeamAddressesOneNamespace: an address signs in as one person. A
// sign-up with a member's address creates no account (the member keeps
// signing in, the answer is the one any sign-up gets); an invitation of
// an account's owner stores nothing (the inviter's answer is the usual
// one); an invitation accepted after its address signed up makes no
// member.
func TestTeamAddressesOneNamespace(t *testing.T) {
	o := newTeamMail()
	s := startSite(t, memstore.NewBackend(), withTeamMail(o))
	owner := confirmedOwner(t, s.base, o, "owner@example.com")
	const memberPass = "the member's own passphrase"

	// A member's address cannot sign up.
	if a := owner.do("POST", "/dashboard/team/invite", url.Values{"email": {"m@example.com"}, "role": {"member"}}); a.code != http.StatusSeeOther {
		t.Fatalf("invite: %d", a.code)
	}
	if a := joinAs(t, s.base, o, "m@example.com", memberPass); a.code != http.StatusSeeOther {
		t.Fatalf("join: %d\n%s", a.code, a.body)
	}
	if a := newUser(t, s.base).do("POST", "/dashboard/signup", url.Values{"email": {"M@example.com"}, "password": {passphrase}}); a.code != http.StatusOK {
		t.Fatalf("sign-up with a member's address: %d, want the usual 200", a.code)
	}
	newUser(t, s.base).login("m@example.com", memberPass, http.StatusSeeOther)
	newUser(t, s.base).login("m@example.com", passphrase, http.StatusUnauthorized)

	// Another account's owner cannot be invited: the inviter sees the
	// usual answer, the owner gets no link and keeps their account.
	confirmedOwner(t, s.base, o, "other@example.com")
	if a := owner.do("POST", "/dashboard/team/invite", url.Values{"email": {"Other@example.com"}, "role": {"admin"}}); a.code != http.StatusSeeOther {
		t.Fatalf("invite of another owner: %d, want the usual 303", a.code)
	}
	o.mu.Lock()
	for _, m := range o.msgs {
		if m.To == "Other@example.com" && strings.Contains(m.Body, "/join?token=") {
			t.Errorf("an account's owner got an invitation link:\n%s", m.Body)
		}
	}
	o.mu.Unlock()

	// Invited, then signed up before joining: the invitation makes no
	// member, and the new account's owner signs in.
	if a := owner.do("POST", "/dashboard/team/invite", url.Values{"email": {"late@example.com"}, "role": {"member"}}); a.code != http.StatusSeeOther {
		t.Fatalf("invite: %d", a.code)
	}
	tok := tokenOf(t, o.link(t, "late@example.com", "/join"))
	confirmedOwner(t, s.base, o, "late@example.com")
	if a := newUser(t, s.base).do("POST", "/dashboard/join", url.Values{"token": {tok}, "password": {memberPass}}); a.code != http.StatusConflict {
		t.Errorf("join with an account's address: %d, want 409", a.code)
	}
	newUser(t, s.base).login("late@example.com", passphrase, http.StatusSeeOther)
	newUser(t, s.base).login("late@example.com", memberPass, http.StatusUnauthorized)
}

// TestTeamMemberAccountSettings: a member changes none of the owner's
// account settings by a direct POST.
func TestTeamMemberAccountSettings(t *testing.T) {
	o := newTeamMail()
	s := startSite(t, memstore.NewBackend(), withTeamMail(o))
	owner := confirmedOwner(t, s.base, o, "owner@example.com")
	if a := owner.do("POST", "/dashboard/team/invite", url.Values{"email": {"m@example.com"}, "role": {"admin"}}); a.code != http.StatusSeeOther {
		t.Fatalf("invite: %d", a.code)
	}
	if a := joinAs(t, s.base, o, "m@example.com", "the admin's own passphrase"); a.code != http.StatusSeeOther {
		t.Fatalf("join: %d", a.code)
	}
	admin := newUser(t, s.base)
	admin.login("m@example.com", "the admin's own passphrase", http.StatusSeeOther)
	if a := admin.do("POST", "/dashboard/account/notices", url.Values{"finish_mail": {"on"}}); a.code != http.StatusForbidden {
		t.Errorf("admin POST /account/notices: %d, want 403", a.code)
	}
}
