package dashboard_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/webhook"
)

// TestConfirmationRemovesWhatCameBefore: following the confirmation link
// removes the key, the webhook endpoint and the other sessions an
// unconfirmed account held, and mails the address what was there;
// ticking "keep" keeps them, and says so.
func TestConfirmationRemovesWhatCameBefore(t *testing.T) {
	t.Parallel()
	for _, keep := range []bool{false, true} {
		b := memstore.NewBackend()
		box := &outbox{}
		d, err := dashboard.New(dashboard.Storage{Accounts: b.Accounts, Passwords: b.Passwords, Sessions: b.Sessions, Tokens: b.Tokens},
			credits.New(b.Credits, nil), mustQueue(t, b), &dashboard.Config{
				Endpoints: b.Endpoints, Outbox: b.Outbox, InsecureCookies: true, Mailer: box, BaseURL: "https://validmail.example.com",
			})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(d.Handler())
		defer srv.Close()
		ctx := context.Background()
		const email = "founder@example.com"
		early := newUser(t, srv.URL)
		early.do("POST", "/dashboard/signup", url.Values{"email": {email}, "password": {passphrase}})
		early.login(email, passphrase, http.StatusSeeOther)
		acct, err := b.Accounts.GetAccountByEmail(ctx, email)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.Endpoints.PutEndpoint(ctx, webhook.PutEndpointParams{AccountID: acct.ID, URL: "https://hooks.example.com/in",
			Enabled: true, Secret: webhook.NewSecret(), Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.Accounts.CreateKey(ctx, store.CreateKeyParams{AccountID: acct.ID, Name: "early"}); err != nil {
			t.Fatal(err)
		}
		var link string
		for _, m := range box.to(email) {
			if i := strings.Index(m.Body, "/dashboard/confirm?token="); i >= 0 {
				link = strings.Fields(m.Body[i:])[0]
			}
		}
		if link == "" {
			t.Fatal("no confirmation link mailed")
		}
		form := url.Values{"token": {strings.TrimPrefix(link, "/dashboard/confirm?token=")}, "password": {passphrase}}
		if keep {
			form.Set("keep", "1")
		}
		confirmer := newUser(t, srv.URL)
		if a := confirmer.do("POST", "/dashboard/confirm", form); a.code >= 400 {
			t.Fatalf("keep %v: confirmation: %d\n%s", keep, a.code, a.body)
		}
		keys, _ := b.Accounts.ListKeys(ctx, acct.ID)
		active := 0
		for _, k := range keys {
			if !k.Revoked() {
				active++
			}
		}
		_, epErr := b.Endpoints.GetEndpoint(ctx, acct.ID)
		earlyIn := early.do("GET", "/dashboard/", nil).code == http.StatusOK
		// The confirming browser is signed in; a key of its own may have
		// been made for it at the welcome.
		if keep && (active < 1 || epErr != nil || !earlyIn) {
			t.Fatalf("kept: %d active keys, endpoint %v, the early session signed in: %v", active, epErr, earlyIn)
		}
		if !keep && (!errors.Is(epErr, webhook.ErrNotFound) || earlyIn || slicesHasActive(keys, "early")) {
			t.Fatalf("removed: endpoint %v, the early session signed in: %v, keys %+v", epErr, earlyIn, keys)
		}
		if a := confirmer.do("GET", "/dashboard/", nil); a.code != http.StatusOK {
			t.Fatalf("keep %v: the confirming browser: %d", keep, a.code)
		}
		var note string
		deadline := time.Now().Add(time.Minute)
		for note == "" && time.Now().Before(deadline) {
			for _, m := range box.to(email) {
				if strings.Contains(m.Body, "Before that, the account held") {
					note = m.Body
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		if !strings.Contains(note, "https://hooks.example.com/in") || !strings.Contains(note, `"early"`) ||
			strings.Contains(note, "You chose to keep them") != keep {
			t.Fatalf("keep %v: the note:\n%s", keep, note)
		}
	}
}

func slicesHasActive(keys []store.Key, name string) bool {
	for _, k := range keys {
		if k.Name == name && !k.Revoked() {
			return true
		}
	}
	return false
}
