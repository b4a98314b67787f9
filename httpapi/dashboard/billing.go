package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/validmail/validmail/billing"
	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/store"
)

// Seller sells credit packs for [Config.Seller]. It must be safe for
// concurrent use.
type Seller interface {
	// Packs returns the packs sold.
	Packs() []billing.Pack
	// Open opens and records a checkout of one pack.
	Open(ctx context.Context, p billing.OpenParams) (billing.Session, error)
	// Fulfil grants the account's checkout id when the provider says it
	// is paid (once, whoever asks first: this page or the provider's
	// event): billing.ErrNotPaid while it is not, billing.ErrNotFound
	// for another account's or an unknown one.
	Fulfil(ctx context.Context, accountID, id string) (billing.Outcome, error)
	// Receipt returns the address of the receipt of the account's paid
	// checkout id.
	Receipt(ctx context.Context, accountID, id string) (string, error)
}

// maxPurchasesShown bounds the history entries the billing page reads
// for its list of purchases.
const maxPurchasesShown = 100

type packView struct {
	Credits   int64
	Price     string
	Plan      string // the plan the pack puts the buyer on, if any
	Suggested bool   // the smallest pack covering what a list needs
}

type purchaseView struct {
	Credits int64
	Time    string
	Receipt string // the console's path to the receipt
}

type billingData struct {
	Balance   int64
	Packs     []packView
	Need      int64 // credits a list preview asked for; 0 when none
	Outcome   string
	Success   bool
	Purchases []purchaseView
}

// zeroDecimal are the currencies without a minor unit, whose prices are
// written as they are given.
var zeroDecimal = map[string]bool{"bif": true, "clp": true, "djf": true, "gnf": true, "jpy": true, "kmf": true, "krw": true,
	"mga": true, "pyg": true, "rwf": true, "ugx": true, "vnd": true, "vuv": true, "xaf": true, "xof": true, "xpf": true}

// formatPrice writes a price in the currency's smallest unit as people
// read it: 900 usd → "9.00 USD".
func formatPrice(amount int64, currency string) string {
	cur := strings.ToUpper(currency)
	if zeroDecimal[currency] {
		return thousands(amount) + " " + cur
	}
	return fmt.Sprintf("%s.%02d %s", thousands(amount/100), amount%100, cur)
}

// billingPage serves GET /billing: the packs, the purchases with their
// receipts, and, back from the payment page, what came of the checkout
// (?checkout=ID, ?canceled=1). ?need=N, from a list preview, suggests the
// smallest pack of at least N credits.
func (d *Dashboard) billingPage(w http.ResponseWriter, r *http.Request, a store.Account) {
	ctx := r.Context()
	q := r.URL.Query()
	var data billingData
	status := http.StatusOK
	refresh := false
	if id := q.Get("checkout"); id != "" {
		data.Outcome, data.Success, refresh = d.checkoutOutcome(ctx, a, id)
	} else if q.Get("canceled") != "" {
		data.Outcome = "The checkout was cancelled: no payment was made."
	}
	if n, err := strconv.ParseInt(q.Get("need"), 10, 64); err == nil && n > 0 && n <= billing.MaxPackCredits {
		data.Need = n
	}
	suggested := false
	for _, p := range d.cfg.Seller.Packs() {
		pv := packView{Credits: p.Credits, Price: formatPrice(p.Price, p.Currency), Plan: p.Plan}
		if data.Need > 0 && !suggested && p.Credits >= data.Need {
			pv.Suggested, suggested = true, true
		}
		data.Packs = append(data.Packs, pv)
	}
	var err error
	if data.Balance, err = d.cfg.Ledger.Balance(ctx, a.ID); err != nil {
		d.backendError(w, r, "balance", err)
		return
	}
	if data.Purchases, err = d.purchases(ctx, a.ID); err != nil {
		d.backendError(w, r, "credit history", err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	d.render(w, r, status, "billing", page{Title: "Buy credits", Nav: "billing", Email: a.Email, Data: data, Refresh: refresh})
}

// checkoutOutcome fulfils the account's checkout id on the buyer's
// return and says what came of it; refresh is true while the payment is
// still being confirmed.
func (d *Dashboard) checkoutOutcome(ctx context.Context, a store.Account, id string) (msg string, ok, refresh bool) {
	if len(id) > billing.MaxCheckoutIDBytes {
		return "That checkout is not one of this account's.", false, false
	}
	out, err := d.cfg.Seller.Fulfil(ctx, a.ID, id)
	switch {
	case errors.Is(err, billing.ErrNotFound):
		return "That checkout is not one of this account's.", false, false
	case errors.Is(err, billing.ErrNotPaid):
		return "Your payment is being confirmed: the credits are added as soon as it is. This page reloads until then.", false, true
	case err != nil:
		d.cfg.Logger.ErrorContext(ctx, "dashboard: fulfil checkout", "checkout", id, "err", err)
		return "The payment could not be checked just now; the credits are added as soon as it is confirmed. Reload this page in a moment.", false, false
	}
	return fmt.Sprintf("Payment received: %s credits were added to your balance.", thousands(out.Granted.Delta)), true, false
}

// purchases lists the account's paid checkouts among its newest entries.
func (d *Dashboard) purchases(ctx context.Context, account string) ([]purchaseView, error) {
	page, err := d.cfg.Ledger.HistoryPage(ctx, credits.PageParams{AccountID: account, Limit: maxPurchasesShown})
	if err != nil {
		return nil, err
	}
	var out []purchaseView
	for _, e := range page.Entries {
		if id, ok := billing.CheckoutOfGrant(e.IdempotencyKey); ok && e.Reason == credits.ReasonGrant {
			out = append(out, purchaseView{Credits: e.Delta, Time: formatTime(e.Time), Receipt: d.path("/billing/receipts/" + url.PathEscape(id))})
		}
	}
	return out, nil
}

// openCheckout serves POST /billing/checkout (credits=N): it opens a
// checkout of that pack and sends the buyer to its payment page.
func (d *Dashboard) openCheckout(w http.ResponseWriter, r *http.Request, a store.Account) {
	if err := r.ParseForm(); err != nil {
		d.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	n, err := strconv.ParseInt(r.PostForm.Get("credits"), 10, 64)
	if err != nil {
		d.fail(w, r, http.StatusUnprocessableEntity, "Choose one of the packs.")
		return
	}
	ret := d.cfg.CheckoutReturnURL
	s, err := d.cfg.Seller.Open(r.Context(), billing.OpenParams{
		AccountID: a.ID, Email: a.Email, Credits: n,
		SuccessURL: ret + "?checkout={CHECKOUT_SESSION_ID}", CancelURL: ret + "?canceled=1",
	})
	switch {
	case errors.Is(err, billing.ErrUnknownPack):
		d.fail(w, r, http.StatusUnprocessableEntity, "Choose one of the packs.")
		return
	case err != nil:
		d.cfg.Logger.ErrorContext(r.Context(), "dashboard: open checkout", "err", err)
		d.fail(w, r, http.StatusServiceUnavailable, "The payment page could not be opened just now. Nothing was charged; try again in a moment.")
		return
	}
	d.audit(r.Context(), a, "credits.checkout_created", fmt.Sprintf("%d credits for %s", s.Pack.Credits, formatPrice(s.Pack.Price, s.Pack.Currency)))
	// A page with the link, followed at once by the script: the console's
	// CSP keeps forms to its own origin, links go anywhere.
	w.Header().Set("Cache-Control", "no-store")
	d.render(w, r, http.StatusOK, "checkout", page{Title: "Continue to payment", Nav: "billing", Email: a.Email, Data: struct {
		URL     string
		Credits int64
		Price   string
	}{s.URL, s.Pack.Credits, formatPrice(s.Pack.Price, s.Pack.Currency)}})
}

// receipt serves GET /billing/receipts/{id}: a redirect to the payment
// provider's receipt of one of the account's purchases.
func (d *Dashboard) receipt(w http.ResponseWriter, r *http.Request, a store.Account) {
	id := r.PathValue("id")
	if len(id) > billing.MaxCheckoutIDBytes {
		d.fail(w, r, http.StatusNotFound, "There is no such purchase.")
		return
	}
	u, err := d.cfg.Seller.Receipt(r.Context(), a.ID, id)
	switch {
	case errors.Is(err, billing.ErrNotFound), errors.Is(err, billing.ErrNotPaid):
		d.fail(w, r, http.StatusNotFound, "There is no receipt for this purchase.")
		return
	case err != nil:
		d.cfg.Logger.ErrorContext(r.Context(), "dashboard: receipt", "checkout", id, "err", err)
		d.fail(w, r, http.StatusServiceUnavailable, "The receipt could not be fetched just now; try again in a moment.")
		return
	}
	http.Redirect(w, r, u, http.StatusSeeOther)
}
