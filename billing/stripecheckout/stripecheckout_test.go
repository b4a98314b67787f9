package stripecheckout_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/billing"
	"github.com/validmail/validmail/billing/billingtest"
	"github.com/validmail/validmail/billing/stripecheckout"
	"github.com/validmail/validmail/billing/stripecheckout/stripetest"
	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/memstore"
)

const secret = "whsec_test_secret"

type fixture struct {
	store  *memstore.Store
	ledger *credits.Ledger
	seller *stripecheckout.Seller
}

func setup(t *testing.T, apiURL string) fixture {
	t.Helper()
	st := memstore.New()
	l := credits.New(st, nil)
	s, err := stripecheckout.New(st, l, &stripecheckout.Config{
		SecretKey: "sk_test_123", WebhookSecret: secret, APIURL: apiURL, Packs: stripetest.Packs(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{st, l, s}
}

// event returns a checkout.session event's body.
func event(typ, session, paymentStatus string) []byte {
	return stripetest.CheckoutEvent(typ, session, paymentStatus, map[string]any{
		// What an attacker with a session of their own could not make
		// the service trust: the grant follows the record.
		"client_reference_id": "someone-else", "metadata": map[string]string{"credits": "999999"},
	})
}

func sign(payload []byte, at time.Time) string {
	return stripetest.Sign(payload, secret, at)
}

func (f fixture) record(t *testing.T, id, account string, credits int64) {
	t.Helper()
	p, err := billing.FindPack(stripetest.Packs(), credits)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.RecordCheckout(t.Context(), billing.Checkout{ID: id, AccountID: account, Pack: p}); err != nil {
		t.Fatal(err)
	}
}

func (f fixture) balance(t *testing.T, account string) int64 {
	t.Helper()
	b, err := f.ledger.Balance(t.Context(), account)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHandleEvent(t *testing.T) {
	t.Parallel()
	f := setup(t, "")
	f.record(t, "cs_paid", "acct-a", 1000)
	f.record(t, "cs_async", "acct-b", 10000)
	f.record(t, "cs_unpaid", "acct-c", 1000)
	now := time.Now()
	tests := []struct {
		name    string
		body    []byte
		sig     string
		wantErr error
		ignored string
	}{
		{"paid", event("checkout.session.completed", "cs_paid", "paid"), "", nil, ""},
		{"paid again", event("checkout.session.completed", "cs_paid", "paid"), "", nil, ""},
		{"async payment", event("checkout.session.async_payment_succeeded", "cs_async", "paid"), "", nil, ""},
		{"unpaid", event("checkout.session.completed", "cs_unpaid", "unpaid"), "", nil, "unpaid"},
		{"not ours", event("checkout.session.completed", "cs_foreign", "paid"), "", nil, "unknown session"},
		{"other type", event("customer.created", "cs_unpaid", "paid"), "", nil, "event type"},
		{"bad signature", event("checkout.session.completed", "cs_unpaid", "paid"), "t=1,v1=00", billing.ErrSignature, ""},
		{"no signature", event("checkout.session.completed", "cs_unpaid", "paid"), "-", billing.ErrSignature, ""},
		{"other secret", event("checkout.session.completed", "cs_unpaid", "paid"),
			stripetest.Sign(event("checkout.session.completed", "cs_unpaid", "paid"), "whsec_other", now), billing.ErrSignature, ""},
		{"too old", event("checkout.session.completed", "cs_unpaid", "paid"), sign(event("checkout.session.completed", "cs_unpaid", "paid"), now.Add(-10*time.Minute)), billing.ErrSignature, ""},
		{"ahead", event("checkout.session.completed", "cs_unpaid", "paid"), sign(event("checkout.session.completed", "cs_unpaid", "paid"), now.Add(10*time.Minute)), billing.ErrSignature, ""},
		{"not JSON", []byte("{"), "", billing.ErrEvent, ""},
	}
	for _, tt := range tests {
		sig := tt.sig
		switch sig {
		case "":
			sig = sign(tt.body, now)
		case "-":
			sig = ""
		}
		out, err := f.seller.HandleEvent(t.Context(), tt.body, sig)
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
			t.Errorf("%s: err %v, want %v", tt.name, err, tt.wantErr)
		}
		if err == nil && out.Ignored != tt.ignored {
			t.Errorf("%s: ignored %q, want %q", tt.name, out.Ignored, tt.ignored)
		}
	}
	for account, want := range map[string]int64{"acct-a": 1000, "acct-b": 10000, "acct-c": 0, "someone-else": 0} {
		if got := f.balance(t, account); got != want {
			t.Errorf("balance of %s = %d, want %d", account, got, want)
		}
	}
	h, err := f.ledger.History(t.Context(), "acct-a")
	if err != nil || len(h) != 1 || h[0].IdempotencyKey != billing.GrantKey("cs_paid") || h[0].Reason != credits.ReasonGrant {
		t.Fatalf("history of acct-a: %+v, %v; want one grant keyed by the session", h, err)
	}
}

func TestHandleEventConcurrent(t *testing.T) {
	t.Parallel()
	f := setup(t, "")
	f.record(t, "cs_race", "acct-race", 10000)
	body := event("checkout.session.completed", "cs_race", "paid")
	sig := sign(body, time.Now())
	var wg sync.WaitGroup
	var mu sync.Mutex
	fresh := 0
	for range 16 {
		wg.Go(func() {
			out, err := f.seller.HandleEvent(context.Background(), body, sig)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if out.Granted.ID == "" {
				t.Error("a paid event granted nothing")
			}
			if !out.Granted.Replayed {
				fresh++
			}
		})
	}
	wg.Wait()
	if got := f.balance(t, "acct-race"); got != 10000 || fresh != 1 {
		t.Fatalf("balance %d after %d fresh grants; want 10000 after 1", got, fresh)
	}
}

func TestOpenAgainstStripeMock(t *testing.T) {
	t.Parallel()
	f := setup(t, billingtest.StripeMock(t))
	s, err := f.seller.Open(t.Context(), billing.OpenParams{
		AccountID: "acct-buyer", Email: "buyer@example.com", Credits: 10000,
		SuccessURL: "https://console.example/billing?session={CHECKOUT_SESSION_ID}", CancelURL: "https://console.example/billing",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.ID, "cs_") || !strings.HasPrefix(s.URL, "https://") || s.Pack != stripetest.Packs()[1] {
		t.Fatalf("Open = %+v", s)
	}
	rec, err := f.store.Checkout(t.Context(), s.ID)
	if err != nil || rec.AccountID != "acct-buyer" || rec.Pack != stripetest.Packs()[1] {
		t.Fatalf("recorded %+v, %v", rec, err)
	}
	// stripe-mock's sessions are never paid.
	if _, err := f.seller.Fulfil(t.Context(), "acct-buyer", s.ID); !errors.Is(err, billing.ErrNotPaid) {
		t.Fatalf("Fulfil of an unpaid session: %v", err)
	}
	if _, err := f.seller.Fulfil(t.Context(), "acct-other", s.ID); !errors.Is(err, billing.ErrNotFound) {
		t.Fatalf("Fulfil by another account: %v", err)
	}
	if _, err := f.seller.Open(t.Context(), billing.OpenParams{AccountID: "acct-buyer", Credits: 5, SuccessURL: "https://x/", CancelURL: "https://x/"}); !errors.Is(err, billing.ErrUnknownPack) {
		t.Fatalf("Open of no pack: %v", err)
	}
}

// fakeStripe answers a session's retrieval as paid, with a receipt, and
// refuses everything else.
func fakeStripe(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := strings.CutPrefix(r.URL.Path, "/v1/checkout/sessions/")
		if r.Method != http.MethodGet || !ok {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":{"type":"invalid_request_error","message":"unexpected"}}`))
			return
		}
		json.NewEncoder(w).Encode(map[string]any{
			"id": id, "object": "checkout.session", "payment_status": "paid",
			"payment_intent": map[string]any{"id": "pi_1", "object": "payment_intent",
				"latest_charge": map[string]any{"id": "ch_1", "object": "charge", "receipt_url": "https://pay.stripe.com/receipts/" + id}},
		})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestFulfilOnReturn(t *testing.T) {
	t.Parallel()
	f := setup(t, fakeStripe(t))
	f.record(t, "cs_back", "acct-back", 1000)
	out, err := f.seller.Fulfil(t.Context(), "acct-back", "cs_back")
	if err != nil || out.Granted.Delta != 1000 || out.Granted.Replayed {
		t.Fatalf("Fulfil = %+v, %v", out, err)
	}
	// The event arriving after the return grants nothing more.
	body := event("checkout.session.completed", "cs_back", "paid")
	if out, err := f.seller.HandleEvent(t.Context(), body, sign(body, time.Now())); err != nil || !out.Granted.Replayed {
		t.Fatalf("the event after the return: %+v, %v", out, err)
	}
	if got := f.balance(t, "acct-back"); got != 1000 {
		t.Fatalf("balance %d, want 1000", got)
	}
	if _, err := f.seller.Fulfil(t.Context(), "acct-back", "cs_unknown"); !errors.Is(err, billing.ErrNotFound) {
		t.Fatalf("Fulfil of an unknown session: %v", err)
	}
	url, err := f.seller.Receipt(t.Context(), "acct-back", "cs_back")
	if err != nil || url != "https://pay.stripe.com/receipts/cs_back" {
		t.Fatalf("Receipt = %q, %v", url, err)
	}
	if _, err := f.seller.Receipt(t.Context(), "acct-other", "cs_back"); !errors.Is(err, billing.ErrNotFound) {
		t.Fatalf("Receipt of another account's session: %v", err)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	l := credits.New(st, nil)
	good := stripecheckout.Config{SecretKey: "sk_test_1", WebhookSecret: "whsec_1", Packs: stripetest.Packs()}
	for name, mutate := range map[string]func(*stripecheckout.Config){
		"no key":      func(c *stripecheckout.Config) { c.SecretKey = "" },
		"no secret":   func(c *stripecheckout.Config) { c.WebhookSecret = "" },
		"no packs":    func(c *stripecheckout.Config) { c.Packs = nil },
		"bad pack":    func(c *stripecheckout.Config) { c.Packs = []billing.Pack{{Credits: 1, Price: 0, Currency: "usd"}} },
		"bad API URL": func(c *stripecheckout.Config) { c.APIURL = "ftp://x" },
	} {
		c := good
		mutate(&c)
		if _, err := stripecheckout.New(st, l, &c); !errors.Is(err, stripecheckout.ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
	if _, err := stripecheckout.New(st, l, &good); err != nil {
		t.Fatal(err)
	}
}

// A pack selling a plan puts the buyer on it with its first grant; a
// replay after an operator changed the plan leaves the change alone.
func TestPackSellsPlan(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	l := credits.New(st, nil)
	ps := []billing.Pack{{Credits: 1000, Price: 900, Currency: "usd", Plan: "pro"}}
	if _, err := stripecheckout.New(st, l, &stripecheckout.Config{SecretKey: "sk_test_1", WebhookSecret: secret, Packs: ps}); !errors.Is(err, stripecheckout.ErrConfig) {
		t.Fatalf("a plan pack without Accounts: %v", err)
	}
	seller, err := stripecheckout.New(st, l, &stripecheckout.Config{SecretKey: "sk_test_1", WebhookSecret: secret, Packs: ps, Accounts: st})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	a, err := st.CreateAccount(ctx, store.CreateAccountParams{Email: "plan@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecordCheckout(ctx, billing.Checkout{ID: "cs_plan", AccountID: a.ID, Pack: ps[0]}); err != nil {
		t.Fatal(err)
	}
	body := event("checkout.session.completed", "cs_plan", "paid")
	plan := func() string {
		got, err := st.GetAccount(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Plan
	}
	if _, err := seller.HandleEvent(ctx, body, sign(body, time.Now())); err != nil || plan() != "pro" {
		t.Fatalf("after the paid event: plan %q, %v", plan(), err)
	}
	if err := st.SetPlan(ctx, a.ID, "free"); err != nil {
		t.Fatal(err)
	}
	if _, err := seller.HandleEvent(ctx, body, sign(body, time.Now())); err != nil || plan() != "free" {
		t.Fatalf("a replay: plan %q, %v; want the operator's free kept", plan(), err)
	}
}
