package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/validmail/validmail/billing"
	"github.com/validmail/validmail/billing/stripecheckout"
	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/store/memstore"
)

// fakeCheckout plays Stripe for a browser: it creates Checkout Sessions
// (through stripe-go's own calls), serves a payment page whose "Pay"
// button marks the session paid and sends the buyer to its success URL,
// and answers a session's retrieval with its payment status.
type fakeCheckout struct {
	srv      *httptest.Server
	mu       sync.Mutex
	sessions map[string]*fakeSession
}

type fakeSession struct {
	success, cancel string
	paid            bool
}

func startFakeCheckout(t *testing.T) *fakeCheckout {
	f := &fakeCheckout{sessions: map[string]*fakeSession{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/checkout/sessions", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		f.mu.Lock()
		id := fmt.Sprintf("cs_test_fake%d", len(f.sessions)+1)
		f.sessions[id] = &fakeSession{success: r.PostForm.Get("success_url"), cancel: r.PostForm.Get("cancel_url")}
		f.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "checkout.session", "url": f.srv.URL + "/pay/" + id, "payment_status": "unpaid"})
	})
	mux.HandleFunc("GET /v1/checkout/sessions/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		s, ok := f.sessions[r.PathValue("id")]
		paid := ok && s.paid
		f.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"type":"invalid_request_error","message":"No such checkout.session"}}`))
			return
		}
		status := map[bool]string{true: "paid", false: "unpaid"}[paid]
		json.NewEncoder(w).Encode(map[string]any{"id": r.PathValue("id"), "object": "checkout.session", "payment_status": status,
			"payment_intent": map[string]any{"id": "pi_1", "object": "payment_intent",
				"latest_charge": map[string]any{"id": "ch_1", "object": "charge", "receipt_url": f.srv.URL + "/receipt/" + r.PathValue("id")}}})
	})
	mux.HandleFunc("GET /pay/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html lang="en"><title>Pay</title><main><h1>Fake Stripe</h1><form method="post"><button id="pay-now">Pay</button></form></main></html>`)
	})
	mux.HandleFunc("POST /pay/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		s := f.sessions[r.PathValue("id")]
		s.paid = true
		f.mu.Unlock()
		http.Redirect(w, r, strings.ReplaceAll(s.success, "{CHECKOUT_SESSION_ID}", r.PathValue("id")), http.StatusSeeOther)
	})
	mux.HandleFunc("GET /receipt/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>Receipt</title><p id="receipt">Receipt of %s</p>`, html.EscapeString(r.PathValue("id")))
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// TestBuyCreditsInBrowser uploads a list the account cannot pay for,
// follows the preview's "Buy credits" to the console's billing page,
// buys the suggested pack on the payment page and comes back: the
// credits are on the balance, the purchase has its receipt, and the
// list waiting in its preview can now be confirmed. With JavaScript (and
// axe) and without.
func TestBuyCreditsInBrowser(t *testing.T) {
	for _, js := range []bool{true, false} {
		t.Run(fmt.Sprintf("javascript=%v", js), func(t *testing.T) {
			stripe := startFakeCheckout(t)
			b := memstore.NewBackend()
			s := startSite(t, b, func(dc *dashboard.Config, base string) {
				dc.BulkLimit = 1
				seller, err := stripecheckout.New(b.Billing, credits.New(b.Credits, nil), &stripecheckout.Config{
					SecretKey: "sk_test_1", WebhookSecret: "whsec_1", APIURL: stripe.srv.URL,
					Packs: []billing.Pack{{Credits: 50, Price: 100, Currency: "usd"}, {Credits: 1000, Price: 900, Currency: "usd"}},
				})
				if err != nil {
					t.Fatal(err)
				}
				dc.Seller, dc.CheckoutReturnURL = seller, base+"/dashboard/billing"
			})
			ctx := browser(t, js)
			email := fmt.Sprintf("buyer-%v@example.com", js)
			newUser(t, s.base).do("POST", "/dashboard/signup", url.Values{"email": {email}, "password": {"a long enough passphrase"}})
			var list strings.Builder
			list.WriteString("email\n")
			for i := range 400 {
				fmt.Fprintf(&list, "user%d@good.com\n", i)
			}
			file := filepath.Join(t.TempDir(), "big.csv")
			if err := os.WriteFile(file, []byte(list.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			run(t, ctx, "sign in",
				chromedp.Navigate(s.base+"/dashboard/login"),
				chromedp.WaitVisible("#password", chromedp.ByID),
				chromedp.SendKeys("#email", email, chromedp.ByID),
				chromedp.SendKeys("#password", "a long enough passphrase", chromedp.ByID),
				chromedp.Submit("#password", chromedp.ByID),
				chromedp.WaitVisible("#secret-value", chromedp.ByID),
			)
			var short, preview string
			run(t, ctx, "upload a list beyond the balance",
				chromedp.Navigate(s.base+"/dashboard/bulk"),
				chromedp.WaitVisible("#list-file", chromedp.ByID),
				chromedp.SetUploadFiles("#list-file", []string{file}, chromedp.ByID),
				chromedp.Click(`//button[normalize-space()="Upload and preview"]`),
				chromedp.WaitVisible("#short", chromedp.ByID),
				chromedp.Text("#short", &short, chromedp.ByID),
				chromedp.Location(&preview),
			)
			if !strings.HasPrefix(short, "99 more credits are needed") {
				t.Fatalf("preview says %q", short)
			}
			if js {
				axeCheck(t, ctx, "list preview short of credits")
			}
			var suggested string
			run(t, ctx, "buy credits from the preview",
				chromedp.Click("#buy-credits", chromedp.ByID),
				chromedp.WaitVisible("#packs-title", chromedp.ByID),
				chromedp.Text("li.suggested button", &suggested, chromedp.ByQuery),
			)
			if suggested != "Buy 1,000 credits for 9.00 USD" {
				t.Fatalf("suggested pack %q", suggested)
			}
			if js {
				axeCheck(t, ctx, "billing")
			}
			view(t, ctx, js, "billing")
			run(t, ctx, "open the checkout", chromedp.Click("li.suggested button", chromedp.ByQuery))
			if !js {
				// Without JavaScript the buyer follows the link.
				run(t, ctx, "continue to payment", chromedp.WaitVisible("#pay", chromedp.ByID), chromedp.Click("#pay", chromedp.ByID))
			}
			var outcome, balance string
			run(t, ctx, "pay and return",
				chromedp.WaitVisible("#pay-now", chromedp.ByID),
				chromedp.Click("#pay-now", chromedp.ByID),
				chromedp.WaitVisible("#outcome", chromedp.ByID),
				chromedp.Text("#outcome", &outcome, chromedp.ByID),
				chromedp.Text("#balance", &balance, chromedp.ByID),
			)
			if outcome != "Payment received: 1,000 credits were added to your balance." || balance != "1,300" {
				t.Fatalf("back from paying: %q, balance %q", outcome, balance)
			}
			if js {
				axeCheck(t, ctx, "billing after paying")
			}
			view(t, ctx, js, "billing-paid")
			// Reloading the return page grants nothing more.
			run(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible("#outcome", chromedp.ByID), chromedp.Text("#balance", &balance, chromedp.ByID))
			if balance != "1,300" {
				t.Fatalf("balance %q after reloading the return page", balance)
			}
			var receipt string
			run(t, ctx, "receipt",
				chromedp.Click(`#purchases a`, chromedp.ByQuery),
				chromedp.WaitVisible("#receipt", chromedp.ByID),
				chromedp.Text("#receipt", &receipt, chromedp.ByID),
			)
			if !strings.HasPrefix(receipt, "Receipt of cs_test_fake") {
				t.Fatalf("receipt page %q", receipt)
			}
			run(t, ctx, "the list can now be confirmed",
				chromedp.Navigate(preview),
				chromedp.WaitVisible("#confirm", chromedp.ByID),
			)
			// The cancel path says no payment was made.
			run(t, ctx, "cancelled checkout",
				chromedp.Navigate(s.base+"/dashboard/billing?canceled=1"),
				chromedp.WaitVisible("#outcome", chromedp.ByID),
				chromedp.Text("#outcome", &outcome, chromedp.ByID),
			)
			if !strings.Contains(outcome, "no payment was made") {
				t.Fatalf("cancel outcome %q", outcome)
			}
		})
	}
}

// view checks a page fits 1280 px and 320 px without scrolling sideways,
// and saves its screenshots at both widths (with JavaScript) when
// -update is set.
func view(t *testing.T, ctx context.Context, js bool, name string) {
	t.Helper()
	noSideways(t, ctx, name, 1280)
	if js {
		shoot(t, ctx, name)
	}
	atWidth(t, ctx, 320, func() {
		noSideways(t, ctx, name, 320)
		if js {
			shoot(t, ctx, "narrow-"+name)
		}
	})
}
