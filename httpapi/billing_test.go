package httpapi_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/billing"
	"github.com/validmail/validmail/billing/billingtest"
	"github.com/validmail/validmail/billing/stripecheckout"
	"github.com/validmail/validmail/billing/stripecheckout/stripetest"
	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/store"
)

const stripeSecret = "whsec_httpapi_test"

// setupBilling is setup with a Stripe seller over the fixture's store,
// calling apiURL.
func setupBilling(t *testing.T, apiURL string) *fixture {
	t.Helper()
	return setup(t, &options{sellerURL: apiURL})
}

func stripeEvent(typ, session, status string) string {
	return string(stripetest.CheckoutEvent(typ, session, status, nil))
}

func stripeSign(body string, secret string, at time.Time) string {
	return stripetest.Sign([]byte(body), secret, at)
}

func postEvent(t *testing.T, f *fixture, body, sig string) *response {
	t.Helper()
	return f.do(t, req{method: "POST", target: "/billing/stripe/webhook", body: body, header: map[string]string{"Stripe-Signature": sig, "Content-Type": "application/json; charset=utf-8"}})
}

func TestBillingCheckoutThroughStripeMock(t *testing.T) {
	t.Parallel()
	f := setupBilling(t, billingtest.StripeMock(t))
	r := f.do(t, req{method: "GET", target: "/api/v1/billing/packs", key: f.key})
	if r.Code != 200 || len(r.JSON(t)["packs"].([]any)) != 2 {
		t.Fatalf("packs: %d %s", r.Code, r.Body)
	}
	r = f.do(t, req{method: "POST", target: "/api/v1/billing/checkout", key: f.key, body: `{"credits": 10000}`})
	if r.Code != 201 {
		t.Fatalf("checkout: %d %s", r.Code, r.Body)
	}
	got := r.JSON(t)
	id, _ := got["session_id"].(string)
	if !strings.HasPrefix(id, "cs_") || !strings.HasPrefix(got["url"].(string), "https://") {
		t.Fatalf("checkout answered %s", r.Body)
	}
	rec, err := f.st.Checkout(context.Background(), id)
	if err != nil || rec.AccountID != f.acct.ID || rec.Pack != stripetest.Packs()[1] {
		t.Fatalf("recorded %+v, %v", rec, err)
	}
	wantProblem(t, f.do(t, req{method: "POST", target: "/api/v1/billing/checkout", key: f.key, body: `{"credits": 5}`}), 400, "unknown_pack")
	wantProblem(t, f.do(t, req{method: "POST", target: "/api/v1/billing/checkout", key: f.key, body: `{}`}), 400, "invalid_body")
	wantProblem(t, f.do(t, req{method: "POST", target: "/api/v1/billing/checkout", key: f.key, body: `{"credits": 1000, "price": 1}`}), 400, "invalid_body")
	validateOnly := f.newKey(t, f.acct.ID, []store.Permission{store.PermValidate})
	wantProblem(t, f.do(t, req{method: "POST", target: "/api/v1/billing/checkout", key: validateOnly, body: `{"credits": 1000}`}), 403, "permission_denied")
}

func TestBillingWebhook(t *testing.T) {
	t.Parallel()
	f := setupBilling(t, "http://127.0.0.1:1") // never called
	ctx := context.Background()
	if _, err := f.st.RecordCheckout(ctx, billing.Checkout{ID: "cs_test_paid", AccountID: f.acct.ID, Pack: stripetest.Packs()[0]}); err != nil {
		t.Fatal(err)
	}
	before := f.balance(t, f.acct.ID)
	paid := stripeEvent("checkout.session.completed", "cs_test_paid", "paid")
	now := time.Now()

	// A bad signature, a stale one, another secret's: 400, nothing granted.
	for name, sig := range map[string]string{
		"garbage":      "t=1,v1=deadbeef",
		"none":         "",
		"stale":        stripeSign(paid, stripeSecret, now.Add(-time.Hour)),
		"other secret": stripeSign(paid, "whsec_other", now),
	} {
		if r := postEvent(t, f, paid, sig); r.Code != 400 || r.JSON(t)["code"] != "invalid_signature" {
			t.Errorf("%s: %d %s", name, r.Code, r.Body)
		}
	}
	if got := f.balance(t, f.acct.ID); got != before {
		t.Fatalf("balance %d after refused events, want %d", got, before)
	}
	// Signed: granted once, however often and however concurrently.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if r := postEvent(t, f, paid, stripeSign(paid, stripeSecret, time.Now())); r.Code != 200 {
				t.Errorf("signed event: %d %s", r.Code, r.Body)
			}
		})
	}
	wg.Wait()
	if got := f.balance(t, f.acct.ID); got != before+1000 {
		t.Fatalf("balance %d after the paid event, want %d", got, before+1000)
	}
	// Ignored, acknowledged: a session never opened, an unpaid one, another type.
	for _, body := range []string{
		stripeEvent("checkout.session.completed", "cs_test_foreign", "paid"),
		stripeEvent("checkout.session.completed", "cs_test_paid", "unpaid"),
		stripeEvent("invoice.paid", "cs_test_paid", "paid"),
	} {
		if r := postEvent(t, f, body, stripeSign(body, stripeSecret, now)); r.Code != 200 {
			t.Errorf("%s: %d %s", body, r.Code, r.Body)
		}
	}
	if got := f.balance(t, f.acct.ID); got != before+1000 {
		t.Fatalf("balance %d after ignored events, want %d", got, before+1000)
	}
	// The history shows the purchase with its receipt's path.
	r := f.do(t, req{method: "GET", target: "/api/v1/credits/history", key: f.key})
	entries := r.JSON(t)["entries"].([]any)
	first := entries[0].(map[string]any)
	if first["reason"] != string(credits.ReasonGrant) || first["receipt_url"] != "/api/v1/billing/receipts/cs_test_paid" {
		t.Fatalf("newest history entry %v", first)
	}
	wantProblem(t, f.do(t, req{method: "GET", target: "/billing/stripe/webhook"}), 405, "method_not_allowed")
}

func TestBillingRoutesNeedASeller(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	wantProblem(t, f.do(t, req{method: "POST", target: "/api/v1/billing/checkout", key: f.key, body: `{"credits": 1000}`}), 404, "not_found")
	wantProblem(t, f.do(t, req{method: "POST", target: "/billing/stripe/webhook", body: `{}`}), 404, "not_found")
	_, err := httpapi.NewHandler(f.v, f.ledger, f.queue, f.st, &httpapi.Config{Seller: newSeller(t, f, "http://127.0.0.1:1")})
	if err == nil {
		t.Fatal("a Seller without return addresses was accepted")
	}
}

func newSeller(t testing.TB, f *fixture, apiURL string) *stripecheckout.Seller {
	t.Helper()
	s, err := stripecheckout.New(f.st, f.ledger, &stripecheckout.Config{
		SecretKey: "sk_test_123", WebhookSecret: stripeSecret, APIURL: apiURL, Packs: stripetest.Packs(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
