package dashboard_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/httpapi/dashboard/mail"
	"github.com/validmail/validmail/store/memstore"
)

// outbox is a Mailer that keeps what it is given.
type outbox struct {
	mu   sync.Mutex
	sent []mail.Message
}

func (o *outbox) Send(_ context.Context, m mail.Message) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sent = append(o.sent, m)
	return nil
}

func (o *outbox) to(addr string) []mail.Message {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ms []mail.Message
	for _, m := range o.sent {
		if m.To == addr {
			ms = append(ms, m)
		}
	}
	return ms
}

// TestUnconfirmedAccountWalk walks the whole route table signed in to an
// unconfirmed account: every route that needs a confirmed account is
// refused with 403 and the page telling it to confirm, whatever its
// form holds, and the only state-changing route it may use asks for the
// confirmation link again. The table is the mux's only source, so the
// walk covers every route.
func TestUnconfirmedAccountWalk(t *testing.T) {
	t.Parallel()
	b := memstore.NewBackend()
	d, err := dashboard.New(dashboard.Storage{Accounts: b.Accounts, Passwords: b.Passwords, Sessions: b.Sessions, Tokens: b.Tokens},
		credits.New(b.Credits, nil), mustQueue(t, b), &dashboard.Config{
			Endpoints: b.Endpoints, Outbox: b.Outbox, InsecureCookies: true,
			Mailer: &outbox{}, BaseURL: "https://validmail.example.com",
			Team: b.Team, Audit: b.Audit, TwoFactor: b.TwoFactor,
		})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	u := newUser(t, srv.URL)
	const email = "squatter@example.com"
	u.do("POST", "/dashboard/signup", url.Values{"email": {email}, "password": {passphrase}})
	u.login(email, passphrase, http.StatusSeeOther)

	// A form holding every field any route reads.
	form := url.Values{
		"name": {"k"}, "permissions": {"validate"}, "url": {"https://hooks.example.com/x"}, "enabled": {"1"},
		"events": {"batch.completed"}, "emails": {"a@example.com"}, "current": {passphrase}, "password": {"another passphrase"},
		"column": {"0"},
	}
	fill := strings.NewReplacer("{id}", "1", "{token}", "tok", "{hash}", "h", "{$}", "")
	counts := map[dashboard.Access]int{}
	for _, rt := range d.Routes() {
		counts[rt.Access]++
		path := "/dashboard" + fill.Replace(rt.Path)
		var f url.Values
		if rt.Method == "POST" {
			f = form
		}
		switch rt.Access {
		case dashboard.Confirmed:
			var a answer
			if rt.Path == "/bulk/list" {
				a = u.upload("a list", "list.csv", "email\na@example.com\n")
			} else {
				a = u.do(rt.Method, path, f)
			}
			if a.code != http.StatusForbidden || !strings.Contains(a.body, "Confirm your email first") {
				t.Errorf("%s %s (needs %s) for an unconfirmed account: %d", rt.Method, rt.Path, rt.Access, a.code)
			}
		case dashboard.SignedIn:
			if rt.Method == "POST" && rt.Path != "/confirm/resend" {
				t.Errorf("%s %s changes state yet lets an unconfirmed account in", rt.Method, rt.Path)
			}
			if a := u.do(rt.Method, path, f); a.code >= 400 {
				t.Errorf("%s %s (needs %s) for an unconfirmed account: %d", rt.Method, rt.Path, rt.Access, a.code)
			}
		}
	}
	if counts[dashboard.Confirmed] < 20 || counts[dashboard.SignedIn] == 0 || counts[dashboard.Public] == 0 {
		t.Fatalf("the route table: %v", counts)
	}
	// Still signed in, and nothing was made.
	if a := u.do("GET", "/dashboard/", nil); a.code != http.StatusOK {
		t.Fatalf("the overview after the walk: %d", a.code)
	}
	acct, err := b.Accounts.GetAccountByEmail(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	if keys, _ := b.Accounts.ListKeys(context.Background(), acct.ID); len(keys) != 0 {
		t.Fatalf("the walk made %d keys", len(keys))
	}
	if _, err := b.Endpoints.GetEndpoint(context.Background(), acct.ID); err == nil {
		t.Fatal("the walk saved a webhook endpoint")
	}
}
