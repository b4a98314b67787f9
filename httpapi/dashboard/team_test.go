package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/httpapi/dashboard/mail"
	"github.com/validmail/validmail/store"
)

// teamMail is a Mailer that keeps what it is given.
type teamMail struct {
	mu   sync.Mutex
	msgs []mail.Message
	sent chan struct{}
}

func newTeamMail() *teamMail { return &teamMail{sent: make(chan struct{}, 1000)} }

func (o *teamMail) Send(_ context.Context, m mail.Message) error {
	o.mu.Lock()
	o.msgs = append(o.msgs, m)
	o.mu.Unlock()
	o.sent <- struct{}{}
	return nil
}

// link waits for a message to the address holding a link to path and
// returns the link.
func (o *teamMail) link(t *testing.T, to, path string) string {
	t.Helper()
	re := regexp.MustCompile(`https?://\S+/dashboard` + regexp.QuoteMeta(path) + `\?token=[A-Za-z0-9_-]+`)
	deadline := time.After(time.Minute)
	for {
		o.mu.Lock()
		for _, m := range o.msgs {
			if m.To == to {
				if l := re.FindString(m.Body); l != "" {
					o.mu.Unlock()
					return l
				}
			}
		}
		o.mu.Unlock()
		select {
		case <-o.sent:
		case <-deadline:
			t.Fatalf("no mail to %s with a link to %s", to, path)
		}
	}
}

func withTeamMail(o *teamMail) func(*dashboard.Config, string) {
	return func(dc *dashboard.Config, base string) { dc.Mailer, dc.BaseURL = o, base }
}

// confirmedOwner signs up with email on a site that mails, follows the
// confirmation link and signs in.
func confirmedOwner(t *testing.T, base string, o *teamMail, email string) *user {
	t.Helper()
	u := newUser(t, base)
	if a := u.do("POST", "/dashboard/signup", url.Values{"email": {email}, "password": {passphrase}}); a.code != http.StatusOK {
		t.Fatalf("sign-up: %d", a.code)
	}
	tok := tokenOf(t, o.link(t, email, "/confirm"))
	if a := u.do("POST", "/dashboard/confirm", url.Values{"token": {tok}, "password": {passphrase}}); a.code >= 400 {
		t.Fatalf("confirm: %d\n%s", a.code, a.body)
	}
	if a := u.do("POST", "/dashboard/login", url.Values{"email": {email}, "password": {passphrase}}); a.code != http.StatusOK && a.code != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", a.code)
	}
	return u
}

// TestTeamRoles: an owner invites an admin and a member by mail; each
// joins with a password of their own through a single-use link and signs
// in; members are refused keys, the webhook, billing, the team and the
// audit log, which their navigation leaves out; admins manage keys but
// not the team; the audit log names who did what; a removed member's
// session ends.
func TestTeamRoles(t *testing.T) {
	for _, be := range testBackends(t) {
		t.Run(be.name, func(t *testing.T) {
			o := newTeamMail()
			s := startSite(t, be.open(t), withTeamMail(o))
			ownerEmail := "owner-" + be.name + "@example.com"
			owner := confirmedOwner(t, s.base, o, ownerEmail)

			join := func(email, role string) *user {
				t.Helper()
				if a := owner.do("POST", "/dashboard/team/invite", url.Values{"email": {email}, "role": {role}}); a.code != http.StatusSeeOther {
					t.Fatalf("invite %s: %d\n%s", email, a.code, a.body)
				}
				tok := tokenOf(t, o.link(t, email, "/join"))
				u := newUser(t, s.base)
				if a := u.do("GET", "/dashboard/join?token="+tok, nil); a.code != http.StatusOK || !strings.Contains(a.body, `name="password"`) {
					t.Fatalf("join page: %d", a.code)
				}
				if a := u.do("POST", "/dashboard/join", url.Values{"token": {tok}, "password": {"member's own passphrase " + role}}); a.code != http.StatusSeeOther {
					t.Fatalf("join: %d\n%s", a.code, a.body)
				}
				// The link works once.
				if a := newUser(t, s.base).do("POST", "/dashboard/join", url.Values{"token": {tok}, "password": {passphrase}}); a.code != http.StatusGone {
					t.Errorf("second use of an invitation: %d, want 410", a.code)
				}
				return u
			}
			memberEmail := "member-" + be.name + "@example.com"
			adminEmail := "admin-" + be.name + "@example.com"
			join(memberEmail, "member")
			join(adminEmail, "admin")

			// Each signs in with their own password, not the owner's.
			member := newUser(t, s.base)
			member.login(memberEmail, passphrase, http.StatusUnauthorized)
			member.login(memberEmail, "member's own passphrase member", http.StatusSeeOther)
			admin := newUser(t, s.base)
			admin.login(adminEmail, "member's own passphrase admin", http.StatusSeeOther)

			home := member.do("GET", "/dashboard/", nil)
			if home.code != http.StatusOK || strings.Contains(home.body, `href="/dashboard/keys"`) || strings.Contains(home.body, `href="/dashboard/team"`) ||
				!strings.Contains(home.body, memberEmail) || !strings.Contains(home.body, `href="/dashboard/bulk"`) {
				t.Errorf("a member's overview: %d, keys or team in the navigation, or the member's email missing", home.code)
			}
			for _, r := range []struct {
				method, path string
				form         url.Values
			}{
				{"GET", "/dashboard/keys", nil},
				{"POST", "/dashboard/keys", url.Values{"name": {"x"}, "permissions": {"validate"}}},
				{"GET", "/dashboard/webhook", nil},
				{"POST", "/dashboard/webhook/delete", url.Values{}},
				{"GET", "/dashboard/team", nil},
				{"POST", "/dashboard/team/invite", url.Values{"email": {"x@example.com"}, "role": {"admin"}}},
				{"GET", "/dashboard/audit", nil},
				{"POST", "/dashboard/account/password", url.Values{"current": {"x"}, "password": {passphrase}}},
			} {
				if a := member.do(r.method, r.path, r.form); a.code != http.StatusForbidden {
					t.Errorf("member %s %s: %d, want 403", r.method, r.path, a.code)
				}
			}
			if a := member.do("GET", "/dashboard/batches", nil); a.code != http.StatusOK {
				t.Errorf("member GET /batches: %d", a.code)
			}
			secret := admin.createKey("admin's key", "validate", "keys")
			// A key made through the API is recorded with the key that made it.
			req, _ := http.NewRequest("POST", s.base+"/api/v1/keys", strings.NewReader(`{"name":"made by a key","permissions":["validate"]}`))
			req.Header.Set("x-api-key", secret)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("POST /api/v1/keys: %d", resp.StatusCode)
			}
			if a := admin.do("GET", "/dashboard/team", nil); a.code != http.StatusForbidden {
				t.Errorf("admin GET /team: %d, want 403", a.code)
			}
			log := admin.do("GET", "/dashboard/audit", nil)
			for _, want := range []string{"key " + store.DisplayPrefix(secret), "made by a key", "admin " + adminEmail, "key.created", "admin&#39;s key", "member.invited", memberEmail + " as member", "owner " + ownerEmail, "member.joined"} {
				if !strings.Contains(log.body, want) {
					t.Errorf("the audit log lacks %q:\n%s", want, log.body)
				}
			}

			// The owner removes the member: its session ends.
			team := owner.do("GET", "/dashboard/team", nil)
			m := regexp.MustCompile(`/dashboard/team/([0-9a-f-]+)/remove"><button type="submit" class="danger" aria-label="Remove ` + regexp.QuoteMeta(memberEmail)).FindStringSubmatch(team.body)
			if m == nil {
				t.Fatalf("no remove button for the member:\n%s", team.body)
			}
			if a := owner.do("POST", "/dashboard/team/"+m[1]+"/remove", url.Values{}); a.code != http.StatusSeeOther {
				t.Fatalf("remove: %d", a.code)
			}
			if a := member.do("GET", "/dashboard/batches", nil); a.code != http.StatusSeeOther || !strings.HasSuffix(a.hdr.Get("Location"), "/dashboard/login") {
				t.Errorf("a removed member's request: %d to %q", a.code, a.hdr.Get("Location"))
			}
			member.login(memberEmail, "member's own passphrase member", http.StatusUnauthorized)
		})
	}
}

// TestTeamRouteRoles: the route table's every route that manages keys,
// the webhook, billing or the team needs more than a member.
func TestTeamRouteRoles(t *testing.T) {
	for _, tt := range []struct {
		path string
		want store.Role
	}{
		{"/keys", store.RoleAdmin}, {"/webhook/delete", store.RoleAdmin}, {"/billing", store.RoleOwner},
		{"/team/invite", store.RoleOwner}, {"/bulk", store.RoleMember}, {"/batches/{id}", store.RoleMember},
	} {
		if got := dashboard.RouteRole(tt.path); got != tt.want {
			t.Errorf("RouteRole(%s) = %s, want %s", tt.path, got, tt.want)
		}
	}
}
