package service_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/validmail/validmail/billing"
	"github.com/validmail/validmail/billing/billingtest"
	"github.com/validmail/validmail/billing/stripecheckout"
	"github.com/validmail/validmail/billing/stripecheckout/stripetest"
	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/storeurl"
)

const billingSecret = "whsec_service_test"

// twoInstances opens tg's backend twice over one fresh namespace: two
// processes of one deployment (memory: the one backend twice).
func twoInstances(t *testing.T, tg listTarget) (*backend.Backend, *backend.Backend) {
	if tg.name == "memory" {
		b := openTarget(t, tg)
		return b, b
	}
	url := tg.url
	ns := "billing_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	switch tg.name {
	case "postgres":
		url += sep(url) + "schema=" + ns
		t.Cleanup(func() { dropSchema(t, tg.url, ns) })
	case "redis", "redis-cluster":
		url += sep(url) + "prefix=" + ns
	}
	var out [2]*backend.Backend
	for i := range out {
		be, err := storeurl.Open(context.Background(), url, &storeurl.Options{Workers: 4, Init: i == 0})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { be.Close() })
		out[i] = be
	}
	return out[0], out[1]
}

func sellingService(t *testing.T, b *backend.Backend, stripeURL string) *service.Service {
	svc, err := service.New(b, &service.Config{
		Validator: &gate{}, Workers: -1,
		PublicURL: "https://validmail.example",
		Stripe: &stripecheckout.Config{
			SecretKey: "sk_test_123", WebhookSecret: billingSecret, APIURL: stripeURL,
			Packs: stripetest.Packs(),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

// TestCheckoutGrantsOnceAcrossInstances opens a checkout through
// stripe-mock on one instance, then posts its signed completion to two
// instances at once, many times, and replays it later: one grant of the
// pack. A bad signature is 400 and a session never opened grants nothing.
func TestCheckoutGrantsOnceAcrossInstances(t *testing.T) {
	t.Parallel()
	stripeURL := billingtest.StripeMock(t)
	for _, tg := range listTargets() {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			b1, b2 := twoInstances(t, tg)
			svcs := []*service.Service{sellingService(t, b1, stripeURL), sellingService(t, b2, stripeURL)}
			ctx := context.Background()
			acct, err := b1.Accounts.CreateAccount(ctx, store.CreateAccountParams{Email: "buyer@example.org", SignupCredits: -1})
			if err != nil {
				t.Fatal(err)
			}
			_, key, err := b1.Accounts.CreateKey(ctx, store.CreateKeyParams{AccountID: acct.ID})
			if err != nil {
				t.Fatal(err)
			}
			do := func(svc *service.Service, method, target, body string, h map[string]string) *httptest.ResponseRecorder {
				r := httptest.NewRequest(method, target, strings.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				for k, v := range h {
					r.Header.Set(k, v)
				}
				rec := httptest.NewRecorder()
				svc.Handler().ServeHTTP(rec, r)
				return rec
			}
			rec := do(svcs[0], "POST", "/api/v1/billing/checkout", `{"credits":10000}`, map[string]string{"x-api-key": key})
			if rec.Code != http.StatusCreated {
				t.Fatalf("checkout: %d %s", rec.Code, rec.Body)
			}
			var opened struct {
				SessionID string `json:"session_id"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &opened); err != nil || opened.SessionID == "" {
				t.Fatalf("checkout answered %s", rec.Body)
			}
			event := func(session string) string {
				return string(stripetest.CheckoutEvent("checkout.session.completed", session, "paid", map[string]any{
					"client_reference_id": acct.ID, "metadata": map[string]string{"account_id": acct.ID, "credits": "10000"}}))
			}
			sign := func(body, secret string) map[string]string {
				return map[string]string{"Stripe-Signature": stripetest.Sign([]byte(body), secret, time.Now())}
			}
			ledger := credits.New(b2.Credits, nil)
			balance := func() int64 {
				n, err := ledger.Balance(ctx, acct.ID)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			paid := event(opened.SessionID)
			if rec := do(svcs[1], "POST", "/billing/stripe/webhook", paid, sign(paid, "whsec_wrong")); rec.Code != 400 || balance() != 0 {
				t.Fatalf("a bad signature: %d %s, balance %d", rec.Code, rec.Body, balance())
			}
			foreign := event("cs_test_never_opened_" + uuid.NewString())
			if rec := do(svcs[0], "POST", "/billing/stripe/webhook", foreign, sign(foreign, billingSecret)); rec.Code != 200 || balance() != 0 {
				t.Fatalf("a session never opened: %d %s, balance %d", rec.Code, rec.Body, balance())
			}
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					if rec := do(svcs[i%2], "POST", "/billing/stripe/webhook", paid, sign(paid, billingSecret)); rec.Code != 200 {
						t.Errorf("instance %d: %d %s", i%2, rec.Code, rec.Body)
					}
				})
			}
			wg.Wait()
			if rec := do(svcs[1], "POST", "/billing/stripe/webhook", paid, sign(paid, billingSecret)); rec.Code != 200 {
				t.Fatalf("replay: %d %s", rec.Code, rec.Body)
			}
			if got := balance(); got != 10000 {
				t.Fatalf("balance %d after the events, want 10000", got)
			}
			h, err := ledger.History(ctx, acct.ID)
			if err != nil || len(h) != 1 || h[0].IdempotencyKey != billing.GrantKey(opened.SessionID) {
				t.Fatalf("history %+v, %v; want one grant keyed by the session", h, err)
			}
		})
	}
}
