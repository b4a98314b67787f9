package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/store"
)

// TestUnconfirmedAccountIsInert walks every operation of the OpenAPI
// document with a key of an account whose email is unconfirmed (a key
// made before the console closed to such accounts): each is refused with
// 403 email_unconfirmed, before its permission, its input or a credit is
// looked at, and nothing is charged.
func TestUnconfirmedAccountIsInert(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{webhooks: true, adminToken: strings.Repeat("a", 40), sellerURL: "http://127.0.0.1:1",
		// Ask Accounts on every request, so that the confirmation below
		// shows at once.
		configure: func(c *httpapi.Config) { c.KeyCacheTTL = -1 }})
	ctx := context.Background()
	a, err := f.st.CreateAccount(ctx, store.CreateAccountParams{Email: "squatter@good.com", Unconfirmed: true})
	if err != nil {
		t.Fatal(err)
	}
	key := f.newKey(t, a.ID, store.AllPermissions())
	narrow := f.newKey(t, a.ID, []store.Permission{store.PermValidate})

	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(f.h.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	fill := strings.NewReplacer("{job_id}", "1", "{batch_id}", "1", "{id}", "00000000-0000-0000-0000-000000000000", "{session_id}", "cs_test_1")
	walked := 0
	for path, ops := range doc.Paths {
		// The operator's routes and the payment provider's events take
		// no API key.
		if path == "/openapi.json" || strings.HasPrefix(path, "/api/v1/admin/") || strings.HasPrefix(path, "/billing/") {
			continue
		}
		for method := range ops {
			method = strings.ToUpper(method)
			if !slices.Contains([]string{"GET", "POST", "PUT", "DELETE"}, method) {
				continue
			}
			target := fill.Replace(path)
			if path == "/validate" {
				target += "?email=jane@good.com"
			}
			body := ""
			switch method {
			case "POST", "PUT":
				body = `{"emails":["jane@good.com"],"url":"https://hooks.good.com/x","name":"k"}`
			}
			for _, k := range []string{key, narrow} {
				resp := f.do(t, req{method: method, target: target, key: k, body: body})
				if resp.Code != http.StatusForbidden || resp.JSON(t)["code"] != "email_unconfirmed" {
					t.Errorf("%s %s with an unconfirmed account's key: %d %s", method, path, resp.Code, resp.Body)
				}
			}
			walked++
		}
	}
	if walked < 15 {
		t.Fatalf("walked %d operations; the document lists more", walked)
	}
	if n := f.balance(t, a.ID); n != 0 {
		t.Fatalf("the unconfirmed account's balance: %d", n)
	}
	if _, err := f.hooks.GetEndpoint(ctx, a.ID); err == nil {
		t.Fatal("an unconfirmed account saved a webhook endpoint")
	}
	// Confirmed, the same key works.
	if _, err := f.st.ConfirmAccount(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if resp := f.do(t, req{method: "GET", target: "/api/v1/account", key: key}); resp.Code != http.StatusOK {
		t.Fatalf("after the confirmation: %d %s", resp.Code, resp.Body)
	}
}
