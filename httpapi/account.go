package httpapi

import (
	"errors"
	"net/http"
	"time"

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
	Email     string `json:"email"`
	Balance   int64  `json:"balance"`
	Plan      string `json:"plan"`
	CreatedAt string `json:"created_at"`
	RequestID string `json:"requestId"`
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
	h.writeJSON(w, c, http.StatusOK, accountResponse{
		Email:     a.Email,
		Balance:   bal,
		Plan:      a.Plan,
		CreatedAt: formatTime(a.CreatedAt),
		RequestID: c.id,
	})
}
