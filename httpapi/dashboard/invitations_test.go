package dashboard_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestTeamInvitations: the team page lists the invitations not yet
// accepted and revokes one; the join page names the invited address; a
// member removed after joining cannot come back with a second
// invitation of the same address.
func TestTeamInvitations(t *testing.T) {
	for _, be := range testBackends(t) {
		t.Run(be.name, func(t *testing.T) {
			o := newTeamMail()
			s := startSite(t, be.open(t), withTeamMail(o))
			owner := confirmedOwner(t, s.base, o, "inv-owner-"+be.name+"@example.com")
			invite := func(email string) {
				t.Helper()
				if a := owner.do("POST", "/dashboard/team/invite", url.Values{"email": {email}, "role": {"member"}}); a.code != http.StatusSeeOther {
					t.Fatalf("invite %s: %d", email, a.code)
				}
			}
			links := func(email string) []string {
				t.Helper()
				o.link(t, email, "/join")
				re := regexp.MustCompile(`https?://\S+/dashboard/join\?token=[A-Za-z0-9_-]+`)
				o.mu.Lock()
				defer o.mu.Unlock()
				var out []string
				for _, m := range o.msgs {
					if m.To == email {
						out = append(out, re.FindString(m.Body))
					}
				}
				return out
			}

			back := "back-" + be.name + "@example.com"
			invite(back)
			invite(back)
			other := "revoked-" + be.name + "@example.com"
			invite(other)
			team := html.UnescapeString(owner.do("GET", "/dashboard/team", nil).body)
			if !strings.Contains(team, "Invitations not yet accepted") || strings.Count(team, "Revoke the invitation of "+back) != 2 ||
				!strings.Contains(team, "Revoke the invitation of "+other) {
				t.Fatalf("the team page does not list the pending invitations:\n%s", team)
			}

			// The join page names the address.
			ls := links(back)
			for deadline := time.Now().Add(time.Minute); len(ls) < 2; ls = links(back) {
				if time.Now().After(deadline) {
					t.Fatalf("%d invitations mailed to %s, want 2", len(ls), back)
				}
				time.Sleep(10 * time.Millisecond)
			}
			first, second := tokenOf(t, ls[0]), tokenOf(t, ls[1])
			member := newUser(t, s.base)
			if a := member.do("GET", "/dashboard/join?token="+first, nil); a.code != http.StatusOK || !strings.Contains(a.body, back) {
				t.Errorf("the join page does not name %s: %d", back, a.code)
			}
			if a := member.do("POST", "/dashboard/join", url.Values{"token": {first}, "password": {"the member's own passphrase"}}); a.code != http.StatusSeeOther {
				t.Fatalf("join: %d", a.code)
			}

			// Removed, the member's second invitation works no more.
			m := regexp.MustCompile(`/dashboard/team/([0-9a-f-]+)/remove"><button type="submit" class="danger" aria-label="Remove ` + regexp.QuoteMeta(back)).
				FindStringSubmatch(owner.do("GET", "/dashboard/team", nil).body)
			if m == nil {
				t.Fatal("no remove button")
			}
			if a := owner.do("POST", "/dashboard/team/"+m[1]+"/remove", url.Values{}); a.code != http.StatusSeeOther {
				t.Fatalf("remove: %d", a.code)
			}
			again := newUser(t, s.base)
			if a := again.do("GET", "/dashboard/join?token="+second, nil); a.code != http.StatusGone || strings.Contains(a.body, `name="password"`) {
				t.Errorf("a removed member's second invitation, GET: %d", a.code)
			}
			if a := again.do("POST", "/dashboard/join", url.Values{"token": {second}, "password": {"the member's own passphrase"}}); a.code != http.StatusGone {
				t.Errorf("a removed member's second invitation rejoins: %d", a.code)
			}

			// The owner revokes the other invitation: its link works no more.
			rm := regexp.MustCompile(`/dashboard/team/invitations/([0-9a-f]{64})/revoke"><button type="submit" class="danger" aria-label="Revoke the invitation of ` + regexp.QuoteMeta(other)).
				FindStringSubmatch(owner.do("GET", "/dashboard/team", nil).body)
			if rm == nil {
				t.Fatal("no revoke button")
			}
			stranger := confirmedOwner(t, s.base, o, "stranger-"+be.name+"@example.com")
			if a := stranger.do("POST", "/dashboard/team/invitations/"+rm[1]+"/revoke", url.Values{}); a.code != http.StatusNotFound {
				t.Errorf("another account revokes the invitation: %d", a.code)
			}
			if a := owner.do("POST", "/dashboard/team/invitations/"+rm[1]+"/revoke", url.Values{}); a.code != http.StatusSeeOther {
				t.Fatalf("revoke: %d", a.code)
			}
			if a := newUser(t, s.base).do("GET", "/dashboard/join?token="+tokenOf(t, links(other)[0]), nil); a.code != http.StatusGone {
				t.Errorf("a revoked invitation's page: %d", a.code)
			}
			if team := owner.do("GET", "/dashboard/team", nil).body; strings.Contains(team, "Invitations not yet accepted") {
				t.Errorf("invitations still listed after the removal and the revocation")
			}
			if log := html.UnescapeString(owner.do("GET", "/dashboard/audit", nil).body); !strings.Contains(log, "member.invitation_revoked") {
				t.Errorf("the audit log lacks the revocation")
			}
		})
	}
}
