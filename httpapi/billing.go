package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/validmail/validmail/billing"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/ratelimit"
)

// MaxBillingEventBytes bounds the body of a payment provider's event at
// POST /billing/stripe/webhook.
const MaxBillingEventBytes = 1 << 20

// Seller sells credit packs for [Config.Seller]; a
// billing/stripecheckout.Seller is one. It must be safe for concurrent use.
type Seller interface {
	// Packs returns the packs sold.
	Packs() []billing.Pack
	// Open opens and records a checkout of one pack; a number of credits
	// no pack sells fails with billing.ErrUnknownPack.
	Open(ctx context.Context, p billing.OpenParams) (billing.Session, error)
	// HandleEvent verifies a provider's signed event and grants what it
	// proves paid, once; a bad signature is billing.ErrSignature, an
	// unreadable event billing.ErrEvent.
	HandleEvent(ctx context.Context, payload []byte, signature string) (billing.Outcome, error)
	// Receipt returns the address of the receipt of the account's paid
	// checkout id: billing.ErrNotFound for another account's or an
	// unknown one, billing.ErrNotPaid while unpaid.
	Receipt(ctx context.Context, accountID, id string) (string, error)
}

type packJSON struct {
	Credits  int64  `json:"credits"`
	Price    int64  `json:"price"`
	Currency string `json:"currency"`
	Plan     string `json:"plan,omitempty"`
}

type packsResponse struct {
	Packs     []packJSON `json:"packs"`
	RequestID string     `json:"requestId"`
}

type checkoutRequest struct {
	Credits *int64 `json:"credits"`
}

type checkoutResponse struct {
	SessionID string   `json:"session_id"`
	URL       string   `json:"url"`
	Pack      packJSON `json:"pack"`
	RequestID string   `json:"requestId"`
}

type receiptResponse struct {
	SessionID  string `json:"session_id"`
	ReceiptURL string `json:"receipt_url"`
	RequestID  string `json:"requestId"`
}

// billingRoutes mounts what a Seller serves.
func (h *Handler) billingRoutes(mux *http.ServeMux, allowed map[string]string) {
	mux.HandleFunc("GET /api/v1/billing/packs", h.authed(store.PermStats, h.listPacks))
	mux.HandleFunc("POST /api/v1/billing/checkout", h.authed(store.PermStats, h.openCheckout))
	mux.HandleFunc("GET /api/v1/billing/receipts/{session_id}", h.authed(store.PermStats, h.checkoutReceipt))
	mux.HandleFunc("POST /billing/stripe/webhook", func(w http.ResponseWriter, r *http.Request) { h.billingEvent(w, r, callOf(w)) })
	allowed["/api/v1/billing/packs"] = "GET, HEAD"
	allowed["/api/v1/billing/checkout"] = "POST"
	allowed["/api/v1/billing/receipts/{session_id}"] = "GET, HEAD"
	allowed["/billing/stripe/webhook"] = "POST"
}

func packsJSON(ps []billing.Pack) []packJSON {
	out := make([]packJSON, 0, len(ps))
	for _, p := range ps {
		out = append(out, packJSON{Credits: p.Credits, Price: p.Price, Currency: p.Currency, Plan: p.Plan})
	}
	return out
}

func (h *Handler) listPacks(w http.ResponseWriter, r *http.Request, c *call) {
	h.writeJSON(w, c, http.StatusOK, packsResponse{Packs: packsJSON(h.seller.Packs()), RequestID: c.id})
}

// openCheckout answers POST /api/v1/billing/checkout {"credits": N}: 201
// with the session's id and payment page.
func (h *Handler) openCheckout(w http.ResponseWriter, r *http.Request, c *call) {
	body, ok := h.readBody(w, r, c)
	if !ok {
		return
	}
	var req checkoutRequest
	if !decodeStrict(w, c, body, &req) {
		return
	}
	if req.Credits == nil {
		writeProblem(w, c, CodeInvalidBody, "credits must name a pack: GET /api/v1/billing/packs lists them.")
		return
	}
	if _, err := billing.FindPack(h.seller.Packs(), *req.Credits); err != nil {
		writeProblem(w, c, CodeUnknownPack, "No pack sells "+strconv.FormatInt(*req.Credits, 10)+" credits: GET /api/v1/billing/packs lists them.")
		return
	}
	a, err := h.accounts.GetAccount(r.Context(), c.key.AccountID)
	if errors.Is(err, store.ErrNotFound) {
		writeProblem(w, c, CodeInvalidAPIKey, "The API key is not valid or has been revoked.")
		return
	}
	if err != nil {
		h.backendError(w, c, "get account", err)
		return
	}
	s, err := h.seller.Open(r.Context(), billing.OpenParams{
		AccountID:  a.ID,
		Email:      a.Email,
		Credits:    *req.Credits,
		SuccessURL: h.checkoutSuccess,
		CancelURL:  h.checkoutCancel,
	})
	switch {
	case errors.Is(err, billing.ErrUnknownPack):
		writeProblem(w, c, CodeUnknownPack, "No pack sells "+strconv.FormatInt(*req.Credits, 10)+" credits.")
		return
	case err != nil && !unavailable(err) && !errors.Is(err, store.ErrDataLost):
		// The payment provider refused or could not be reached.
		c.errText = "open checkout: " + err.Error()
		w.Header().Set("Retry-After", unavailableRetryAfter)
		writeProblem(w, c, CodeUnavailable, "The payment provider could not open a checkout; retry later.")
		return
	case err != nil:
		h.backendError(w, c, "open checkout", err)
		return
	}
	p := s.Pack
	h.writeJSON(w, c, http.StatusCreated, checkoutResponse{
		SessionID: s.ID, URL: s.URL,
		Pack:      packJSON{Credits: p.Credits, Price: p.Price, Currency: p.Currency, Plan: p.Plan},
		RequestID: c.id,
	})
}

// checkoutReceipt answers the receipt of one of the account's paid
// checkouts.
func (h *Handler) checkoutReceipt(w http.ResponseWriter, r *http.Request, c *call) {
	id := r.PathValue("session_id")
	if len(id) > billing.MaxCheckoutIDBytes || !cleanText(id) {
		writeProblem(w, c, CodeNotFound, "No purchase of this account has this id.")
		return
	}
	u, err := h.seller.Receipt(r.Context(), c.key.AccountID, id)
	switch {
	case errors.Is(err, billing.ErrNotFound):
		writeProblem(w, c, CodeNotFound, "No purchase of this account has this id.")
		return
	case errors.Is(err, billing.ErrNotPaid):
		writeProblem(w, c, CodeNotFound, "This checkout is not paid: it has no receipt.")
		return
	case err != nil && !unavailable(err):
		c.errText = "receipt: " + err.Error()
		w.Header().Set("Retry-After", unavailableRetryAfter)
		writeProblem(w, c, CodeUnavailable, "The payment provider could not be asked for the receipt; retry later.")
		return
	case err != nil:
		h.backendError(w, c, "receipt", err)
		return
	}
	h.writeJSON(w, c, http.StatusOK, receiptResponse{SessionID: id, ReceiptURL: u, RequestID: c.id})
}

// billingEvent answers POST /billing/stripe/webhook: the payment
// provider's signed events. A bad signature counts as a failed
// authentication of the client's network (429 once its bucket is empty).
func (h *Handler) billingEvent(w http.ResponseWriter, r *http.Request, c *call) {
	ip := ratelimit.SubscriberKey(h.clientIP(r))
	if h.authBlocked(w, c, ip) {
		return
	}
	body, ok := readBodyLimit(w, r, c, MaxBillingEventBytes)
	if !ok {
		return
	}
	out, err := h.seller.HandleEvent(r.Context(), body, r.Header.Get("Stripe-Signature"))
	switch {
	case errors.Is(err, billing.ErrSignature):
		h.authFailed(r, c, ip)
		writeProblem(w, c, CodeInvalidSignature, "The Stripe-Signature header does not sign this body with the endpoint's secret, or is too old.")
		return
	case errors.Is(err, billing.ErrEvent):
		writeProblem(w, c, CodeInvalidBody, "The body is not an event this endpoint reads.")
		return
	case err != nil:
		// The provider delivers the event again later.
		h.backendError(w, c, "billing event", err)
		return
	}
	if h.logger != nil && out.Ignored == "unknown session" {
		h.logger.WarnContext(r.Context(), "httpapi: a paid checkout the service did not open; nothing granted", "request_id", c.id, "session", out.Session)
	}
	h.writeJSON(w, c, http.StatusOK, struct {
		Received  bool   `json:"received"`
		RequestID string `json:"requestId"`
	}{true, c.id})
}
