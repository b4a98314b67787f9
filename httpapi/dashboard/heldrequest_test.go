package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/validmail/validmail/httpapi/dashboard/mail/mailtest"
)

// A squatter's request held open (its body sent all but its last byte)
// across the owner's reset makes nothing once it ends: the squatter's
// session ended with the reset, and a change is made only while the
// session still exists.
func TestHeldRequestMakesNothingAfterTheReset(t *testing.T) {
	for _, be := range testBackends(t) {
		t.Run(be.name, func(t *testing.T) {
			srv := mailtest.Start(t, nil)
			b := be.open(t)
			s := startSite(t, b, withMail(t, srv))
			ctx := context.Background()
			email := "held-" + be.name + "@good.com"

			squatter := newUser(t, s.base)
			squatter.do("POST", "/dashboard/signup", url.Values{"email": {email}, "password": {"the squatter's passphrase"}})
			squatter.login(email, "the squatter's passphrase", http.StatusSeeOther)

			body := url.Values{"name": {"backdoor"}, "permissions": {"validate", "webhooks"}}.Encode()
			pr, pw := io.Pipe()
			req, _ := http.NewRequest("POST", s.base+"/dashboard/keys", pr)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			answered := make(chan int, 1)
			go func() {
				resp, err := squatter.c.Do(req)
				if err != nil {
					answered <- 0
					return
				}
				resp.Body.Close()
				answered <- resp.StatusCode
			}()
			if _, err := pw.Write([]byte(body[:len(body)-1])); err != nil {
				t.Fatal(err)
			}

			owner := newUser(t, s.base)
			owner.do("POST", "/dashboard/forgot", url.Values{"email": {email}})
			tok := tokenOf(t, waitLink(t, srv, email, "reset"))
			if a := owner.do("POST", "/dashboard/reset", url.Values{"token": {tok}, "password": {"the owner's own passphrase"}}); a.code != http.StatusSeeOther {
				t.Fatalf("reset: %d\n%s", a.code, a.body)
			}

			pw.Write([]byte(body[len(body)-1:]))
			pw.Close()
			if code := <-answered; code == http.StatusCreated || code == http.StatusOK {
				t.Fatalf("the held request was answered %d after the owner's reset", code)
			}
			acct, err := b.Accounts.GetAccountByEmail(ctx, email)
			if err != nil {
				t.Fatal(err)
			}
			keys, err := b.Accounts.ListKeys(ctx, acct.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if !k.Revoked() {
					t.Fatalf("a key made by the held request survives the reset: %q", k.Name)
				}
			}
		})
	}
}
