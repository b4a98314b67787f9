package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/httpapi/dashboard/mail/mailtest"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/webhook"
)

// api calls the site's API with key; it returns the status and the JSON
// body.
func api(t *testing.T, base, method, path, key, body string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	req.Header.Set("x-api-key", key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// TestSquatterLosesEverythingAtTheOwnersReset is the squatter's path on
// every backend: an account created with the victim's address and the
// squatter's password cannot set a webhook or make a key (the console
// refuses an unconfirmed account); whatever it held anyway (a key and an
// endpoint written before those rules) is removed when the owner resets
// the password through the mailed link, with the squatter's sessions and
// devices; the owner's batch then reaches no endpoint of the squatter's,
// and the owner is mailed what was there.
func TestSquatterLosesEverythingAtTheOwnersReset(t *testing.T) {
	for _, be := range testBackends(t) {
		t.Run(be.name, func(t *testing.T) {
			var hits atomic.Int64
			squatterHook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				w.WriteHeader(http.StatusNoContent)
			}))
			defer squatterHook.Close()
			srv := mailtest.Start(t, nil)
			b := be.open(t)
			s := startSite(t, b, withMail(t, srv))
			ctx := context.Background()
			email := "ceo-" + be.name + "@good.com"

			squatter := newUser(t, s.base)
			squatter.do("POST", "/dashboard/signup", url.Values{"email": {email}, "password": {"the squatter's passphrase"}})
			squatter.login(email, "the squatter's passphrase", http.StatusSeeOther)
			if a := squatter.do("POST", "/dashboard/webhook", url.Values{"url": {squatterHook.URL}, "enabled": {"1"}}); a.code != http.StatusForbidden || strings.Contains(a.body, "whsec_") {
				t.Fatalf("an unconfirmed account saves a webhook: %d", a.code)
			}
			if a := squatter.do("POST", "/dashboard/keys", url.Values{"name": {"k"}, "permissions": {"validate"}}); a.code != http.StatusForbidden {
				t.Fatalf("an unconfirmed account creates a key: %d", a.code)
			}
			// What such an account could hold before: an endpoint and a
			// key, written straight to the store.
			acct, err := b.Accounts.GetAccountByEmail(ctx, email)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := b.Endpoints.PutEndpoint(ctx, webhook.PutEndpointParams{AccountID: acct.ID, URL: squatterHook.URL, Enabled: true,
				Secret: webhook.NewSecret(), Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
			_, squatterKey, err := b.Accounts.CreateKey(ctx, store.CreateKeyParams{AccountID: acct.ID, Name: "squatter", Permissions: store.AllPermissions()})
			if err != nil {
				t.Fatal(err)
			}
			if code, m := api(t, s.base, "PUT", "/api/v1/webhook", squatterKey, `{"url":"`+squatterHook.URL+`","enabled":true}`); code != http.StatusForbidden || m["code"] != "email_unconfirmed" {
				t.Fatalf("the squatter's key sets the webhook: %d %v", code, m)
			}

			// The owner asks for a reset, follows the link, signs in.
			owner := newUser(t, s.base)
			owner.do("POST", "/dashboard/forgot", url.Values{"email": {email}})
			tok := tokenOf(t, waitLink(t, srv, email, "reset"))
			if a := owner.do("POST", "/dashboard/reset", url.Values{"token": {tok}, "password": {"the owner's own passphrase"}}); a.code != http.StatusSeeOther {
				t.Fatalf("reset: %d\n%s", a.code, a.body)
			}
			mctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			told, err := srv.WaitFor(mctx, email, "Before that, the account held")
			if err != nil {
				t.Fatalf("the owner was not told what the account held: %v", err)
			}
			if !strings.Contains(told.Text(), squatterHook.URL) || !strings.Contains(told.Text(), `"squatter"`) {
				t.Fatalf("the note names not the endpoint and the key:\n%s", told.Text())
			}
			owner.login(email, "the owner's own passphrase", http.StatusSeeOther)
			if a := owner.do("GET", "/dashboard/webhook", nil); a.code != http.StatusOK || strings.Contains(a.body, squatterHook.URL) {
				t.Fatalf("the owner's webhook page: %d, shows the squatter's URL: %v", a.code, strings.Contains(a.body, squatterHook.URL))
			}
			if _, err := b.Endpoints.GetEndpoint(ctx, acct.ID); !errors.Is(err, webhook.ErrNotFound) {
				t.Fatalf("the squatter's endpoint after the reset: %v", err)
			}
			created := owner.do("POST", "/dashboard/keys", url.Values{"name": {"owner"}, "permissions": {"validate", "batch"}})
			m := secretRE.FindStringSubmatch(created.body)
			if created.code != http.StatusCreated || m == nil {
				t.Fatalf("the owner's key: %d", created.code)
			}
			ownerKey := m[1]

			// The squatter is out: session, key and device.
			if a := squatter.do("GET", "/dashboard/", nil); a.code != http.StatusSeeOther {
				t.Fatalf("the squatter's session after the reset: %d", a.code)
			}
			// Revoked in the store; the API's key cache forgets it within
			// its TTL (a second).
			for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
				code, _ := api(t, s.base, "GET", "/api/v1/account", squatterKey, "")
				if code == http.StatusUnauthorized {
					break
				}
				if code != http.StatusForbidden || time.Since(start) > time.Minute {
					t.Fatalf("the squatter's key after the reset: %d", code)
				}
			}
			for _, c := range squatter.c.Jar.Cookies(mustURL(s.base)) {
				if c.Name == "vm_device" {
					if _, found, err := b.Sessions.FindSession(ctx, store.HashSecret("device:"+c.Value)); err != nil || found {
						t.Fatalf("the squatter's device after the reset: found %v, %v", found, err)
					}
				}
			}

			// The owner's batch completes; the squatter's receiver hears
			// nothing.
			code, sub := api(t, s.base, "POST", "/validate/async", ownerKey, `{"emails":["a@good.com","b@good.com"]}`)
			if code != http.StatusAccepted {
				t.Fatalf("the owner's batch: %d %v", code, sub)
			}
			id, _ := sub["batch_id"].(string)
			deadline := time.Now().Add(2 * time.Minute)
			for {
				_, st := api(t, s.base, "GET", "/api/v1/batches/"+id, ownerKey, "")
				if st["state"] == "completed" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the batch did not complete: %v", st)
				}
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond) // a delivery would be on its way by now
			if n := hits.Load(); n != 0 {
				t.Fatalf("the squatter's endpoint got %d requests", n)
			}
		})
	}
}
