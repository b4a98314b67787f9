package httpapi

import (
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/validmail/validmail/billing"
	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/store"
)

// timeLayout is how the API writes times: ISO 8601, UTC, milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// formatTimePtr formats t, or returns nil (JSON null) for the zero time.
func formatTimePtr(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := formatTime(t)
	return &s
}

type accountResponse struct {
	Email     string       `json:"email"`
	Balance   int64        `json:"balance"`
	Plan      string       `json:"plan"`
	CreatedAt string       `json:"created_at"`
	Usage     accountUsage `json:"usage"`
	RequestID string       `json:"requestId"`
}

// accountUsage is the current calendar month (UTC) so far.
type accountUsage struct {
	Month           string         `json:"month"`
	Validations     map[string]int `json:"validations"`
	CreditsCharged  int64          `json:"credits_charged"`
	CreditsRefunded int64          `json:"credits_refunded"`
}

// account serves GET /api/v1/account.
func (h *Handler) account(w http.ResponseWriter, r *http.Request, c *call) {
	ctx := r.Context()
	a, err := h.accounts.GetAccount(ctx, c.key.AccountID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			// The key outlived its account.
			writeProblem(w, c, CodeInvalidAPIKey, "The API key is not valid or has been revoked.")
			return
		}
		h.backendError(w, c, "get account", err)
		return
	}
	bal, err := h.ledger.Balance(ctx, a.ID)
	if err != nil {
		h.backendError(w, c, "balance", err)
		return
	}
	usage, err := h.monthUsage(r, a.ID)
	if err != nil {
		h.backendError(w, c, "usage", err)
		return
	}
	h.writeJSON(w, c, http.StatusOK, accountResponse{
		Email:     a.Email,
		Balance:   bal,
		Plan:      a.Plan,
		CreatedAt: formatTime(a.CreatedAt),
		Usage:     usage,
		RequestID: c.id,
	})
}

// monthUsage sums the account's month so far: validations by status from
// the usage counts, credits from the ledger's per-day totals.
func (h *Handler) monthUsage(r *http.Request, account string) (accountUsage, error) {
	now := h.now().UTC()
	u := accountUsage{Month: store.MonthKey(now), Validations: map[string]int{}}
	if h.usage != nil {
		m, err := h.usage.MonthUsage(r.Context(), account, now)
		if err != nil {
			return u, err
		}
		u.Validations = m
	}
	// The month's per-day totals: a few rows, however long the history.
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	totals, err := h.ledger.Totals(r.Context(), credits.TotalsParams{AccountID: account, From: month, To: month.AddDate(0, 1, 0)})
	if err != nil {
		return u, err
	}
	for _, t := range totals {
		switch t.Reason {
		case credits.ReasonCharge:
			u.CreditsCharged -= t.Sum
		case credits.ReasonRefund:
			u.CreditsRefunded += t.Sum
		}
	}
	return u, nil
}

// historyEntry is a ledger entry as GET /api/v1/credits/history shows it.
type historyEntry struct {
	ID        string `json:"id"`
	Delta     int64  `json:"delta"`
	Reason    string `json:"reason"`
	Reference string `json:"reference"`
	CreatedAt string `json:"created_at"`
	// ReceiptURL, on a purchase's grant, is the API path answering its
	// receipt.
	ReceiptURL string `json:"receipt_url,omitempty"`
}

type historyResponse struct {
	Entries    []historyEntry `json:"entries"`
	NextCursor *string        `json:"next_cursor"`
	RequestID  string         `json:"requestId"`
}

// creditHistory serves GET /api/v1/credits/history: the account's ledger,
// newest first, paged with limit (1–100, default 20) and cursor.
func (h *Handler) creditHistory(w http.ResponseWriter, r *http.Request, c *call) {
	limit, ok := pageLimit(w, r, c, 20, 100)
	if !ok {
		return
	}
	before, ok := idCursor(w, r, c)
	if !ok {
		return
	}
	// The store reads the page alone, and the cursor is checked before it
	// reaches the store: an entry id, or 400.
	page, err := h.ledger.HistoryPage(r.Context(), credits.PageParams{AccountID: c.key.AccountID, Before: before, Limit: limit})
	if errors.Is(err, credits.ErrInvalidCursor) {
		writeProblem(w, c, CodeInvalidBody, "The cursor query parameter is not one this API gave.")
		return
	}
	if err != nil {
		h.backendError(w, c, "credit history", err)
		return
	}
	resp := historyResponse{Entries: make([]historyEntry, 0, len(page.Entries)), RequestID: c.id}
	for _, e := range page.Entries {
		he := historyEntry{ID: e.ID, Delta: e.Delta, Reason: string(e.Reason), Reference: e.Reference, CreatedAt: formatTime(e.Time)}
		if id, ok := billing.CheckoutOfGrant(e.IdempotencyKey); ok && h.seller != nil && e.Reason == credits.ReasonGrant {
			he.ReceiptURL = "/api/v1/billing/receipts/" + url.PathEscape(id)
		}
		resp.Entries = append(resp.Entries, he)
	}
	if page.More && len(page.Entries) > 0 {
		next := encodeCursor(idPosition(page.Entries[len(page.Entries)-1].ID))
		resp.NextCursor = &next
	}
	h.writeJSON(w, c, http.StatusOK, resp)
}
