package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/ratelimit"
)

// MinAdminTokenBytes is the shortest [Config.AdminToken] accepted: an
// operator token opens every account's credits.
const MinAdminTokenBytes = 32

// maxAdminBody bounds the body of an operator request: a grant is a few
// fields.
const maxAdminBody = 4 << 10

// maxAdminEmail bounds the {email} of an operator route: no address
// stored is longer.
const maxAdminEmail = 320

// adminAccountResponse is an account as the operator's API shows it.
type adminAccountResponse struct {
	AccountID string         `json:"account_id"`
	Email     string         `json:"email"`
	Plan      string         `json:"plan"`
	CreatedAt string         `json:"created_at"`
	Balance   int64          `json:"balance"`
	Credits   creditsSummary `json:"credits"`
	RequestID string         `json:"requestId"`
}

// creditsSummary is where an account's credits came from and went, since
// its creation.
type creditsSummary struct {
	Signup   int64 `json:"signup"`
	Granted  int64 `json:"granted"`
	Charged  int64 `json:"charged"`
	Refunded int64 `json:"refunded"`
}

type grantRequest struct {
	Credits *int64  `json:"credits"`
	Reason  *string `json:"reason"`
}

type grantResponse struct {
	Entry     historyEntry `json:"entry"`
	Replayed  bool         `json:"replayed"`
	Balance   int64        `json:"balance"`
	RequestID string       `json:"requestId"`
}

// adminRoutes mounts the operator's routes; routes calls it only when an
// operator token is configured.
func (h *Handler) adminRoutes(mux *http.ServeMux, allowed map[string]string) {
	mux.HandleFunc("GET /api/v1/admin/accounts/{email}", h.admin(h.adminShowAccount))
	mux.HandleFunc("POST /api/v1/admin/accounts/{email}/grants", h.admin(h.adminGrant))
	allowed["/api/v1/admin/accounts/{email}"] = "GET, HEAD"
	allowed["/api/v1/admin/accounts/{email}/grants"] = "POST"
	if _, ok := h.accounts.(store.PlanSetter); ok {
		mux.HandleFunc("PUT /api/v1/admin/accounts/{email}/plan", h.admin(h.adminSetPlan))
		allowed["/api/v1/admin/accounts/{email}/plan"] = "PUT"
	}
}

type planRequest struct {
	Plan *string `json:"plan"`
}

// adminSetPlan serves PUT /api/v1/admin/accounts/{email}/plan: body
// {"plan": "pro"}, a plan of Config.Plans (any well-formed name without
// them). 200 with the account as GET shows it; every instance applies
// the plan once it reads the account's key again (KeyCacheTTL).
func (h *Handler) adminSetPlan(w http.ResponseWriter, r *http.Request, c *call) {
	body, ok := readBodyLimit(w, r, c, maxAdminBody)
	if !ok {
		return
	}
	var req planRequest
	if !decodeStrict(w, c, body, &req) {
		return
	}
	if req.Plan == nil || store.CheckPlan(*req.Plan) != nil {
		writeProblem(w, c, CodeInvalidBody, "plan must be a plan's name: letters, digits, '-', '_' or '.', at most 64.")
		return
	}
	if h.plans != nil {
		if _, err := h.plans.Get(*req.Plan); err != nil {
			writeProblem(w, c, CodeUnknownPlan, "No plan is named "+*req.Plan+"; the plans are "+strings.Join(h.plans.Names(), ", ")+".")
			return
		}
	}
	a, ok := h.adminAccount(w, r, c)
	if !ok {
		return
	}
	err := h.accounts.(store.PlanSetter).SetPlan(r.Context(), a.ID, *req.Plan)
	if errors.Is(err, store.ErrNotFound) {
		writeProblem(w, c, CodeNotFound, "No account has this email.")
		return
	}
	if err != nil {
		h.backendError(w, c, "set plan", err)
		return
	}
	if h.logger != nil {
		h.logger.InfoContext(r.Context(), "httpapi: plan set by an operator", "request_id", c.id, "account_id", a.ID, "plan", *req.Plan)
	}
	h.adminShowAccount(w, r, c)
}

// admin wraps next with the operator token's check: a bearer token
// compared in constant time (their hashes are, so the length leaks
// nothing either). Failures count against the client address like those
// of API keys.
func (h *Handler) admin(next func(http.ResponseWriter, *http.Request, *call)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := callOf(w)
		ip := ratelimit.SubscriberKey(h.clientIP(r))
		if h.authBlocked(w, c, ip) {
			return
		}
		// The scheme is case-insensitive (RFC 9110 §11.1).
		auth := r.Header.Get("Authorization")
		token, ok := "", len(auth) > len("Bearer ") && strings.EqualFold(auth[:len("Bearer ")], "Bearer ")
		if ok {
			token = auth[len("Bearer "):]
		}
		if !ok || token == "" {
			h.authFailed(r, c, ip)
			w.Header().Set("WWW-Authenticate", `Bearer realm="validmail-admin"`)
			writeProblem(w, c, CodeMissingAPIKey, "Send the operator token in the Authorization header: Bearer TOKEN.")
			return
		}
		sum := sha256.Sum256([]byte(token))
		if subtle.ConstantTimeCompare(sum[:], h.adminHash[:]) != 1 {
			h.authFailed(r, c, ip)
			w.Header().Set("WWW-Authenticate", `Bearer realm="validmail-admin", error="invalid_token"`)
			writeProblem(w, c, CodeInvalidAPIKey, "The operator token is not valid.")
			return
		}
		next(w, r, c)
	}
}

// adminAccount finds the account the route's {email} names, answering
// 404 when there is none: an {email} no account could have (too long,
// not UTF-8, control characters) is not looked up.
func (h *Handler) adminAccount(w http.ResponseWriter, r *http.Request, c *call) (store.Account, bool) {
	email := r.PathValue("email")
	if email == "" || len(email) > maxAdminEmail || !cleanText(email) {
		writeProblem(w, c, CodeNotFound, "No account has this email.")
		return store.Account{}, false
	}
	a, err := h.accounts.GetAccountByEmail(r.Context(), email)
	if errors.Is(err, store.ErrNotFound) {
		writeProblem(w, c, CodeNotFound, "No account has this email.")
		return a, false
	}
	if err != nil {
		h.backendError(w, c, "get account by email", err)
		return a, false
	}
	return a, true
}

// adminShowAccount serves GET /api/v1/admin/accounts/{email}.
func (h *Handler) adminShowAccount(w http.ResponseWriter, r *http.Request, c *call) {
	a, ok := h.adminAccount(w, r, c)
	if !ok {
		return
	}
	bal, err := h.ledger.Balance(r.Context(), a.ID)
	if err != nil {
		h.backendError(w, c, "balance", err)
		return
	}
	s, err := h.ledger.Summary(r.Context(), credits.SummaryParams{AccountID: a.ID, From: a.CreatedAt, To: h.now().Add(24 * time.Hour)})
	if err != nil {
		h.backendError(w, c, "credit summary", err)
		return
	}
	h.writeJSON(w, c, http.StatusOK, adminAccountResponse{
		AccountID: a.ID,
		Email:     a.Email,
		Plan:      a.Plan,
		CreatedAt: formatTime(a.CreatedAt),
		Balance:   bal,
		Credits:   creditsSummary{Signup: s.Signup, Granted: s.Granted, Charged: s.Charged, Refunded: s.Refunded},
		RequestID: c.id,
	})
}

// adminGrant serves POST /api/v1/admin/accounts/{email}/grants: body
// {"credits": N, "reason": "…"}, an optional Idempotency-Key header
// (a payment's id) making the grant apply once. 201 with the entry; a
// replay is 200 with the first entry.
func (h *Handler) adminGrant(w http.ResponseWriter, r *http.Request, c *call) {
	idemKey := r.Header.Get("Idempotency-Key")
	if len(idemKey) > credits.MaxIdempotencyKeyBytes || !cleanText(idemKey) {
		writeProblem(w, c, CodeInvalidBody, "The Idempotency-Key header must be at most 255 bytes of text.")
		return
	}
	body, ok := readBodyLimit(w, r, c, maxAdminBody)
	if !ok {
		return
	}
	var req grantRequest
	if !decodeStrict(w, c, body, &req) {
		return
	}
	switch {
	case req.Credits == nil || *req.Credits < 1 || *req.Credits > credits.MaxGrant:
		writeProblem(w, c, CodeInvalidBody, "credits must be a whole number from 1 to 1000000000.")
		return
	case req.Reason == nil || *req.Reason == "" || len(*req.Reason) > credits.MaxNoteBytes || !cleanText(*req.Reason):
		writeProblem(w, c, CodeInvalidBody, "reason must be 1 to 200 bytes of text without control characters.")
		return
	}
	a, ok := h.adminAccount(w, r, c)
	if !ok {
		return
	}
	e, err := h.ledger.GrantCredits(r.Context(), credits.GrantParams{
		AccountID:      a.ID,
		Credits:        *req.Credits,
		Note:           *req.Reason,
		IdempotencyKey: idemKey,
	})
	switch {
	case errors.Is(err, credits.ErrIdempotencyConflict):
		writeProblem(w, c, CodeIdempotencyKeyReused, "This Idempotency-Key was used for a grant of another amount.")
		return
	case errors.Is(err, credits.ErrInvalidAmount), errors.Is(err, credits.ErrInvalidNote):
		writeProblem(w, c, CodeInvalidBody, "The grant is not valid.")
		return
	case err != nil:
		h.backendError(w, c, "grant", err)
		return
	}
	bal, err := h.ledger.Balance(r.Context(), a.ID)
	if err != nil {
		h.backendError(w, c, "balance", err)
		return
	}
	if h.logger != nil {
		h.logger.InfoContext(r.Context(), "httpapi: credits granted by an operator", "request_id", c.id,
			"account_id", a.ID, "credits", e.Delta, "entry", e.ID, "replayed", e.Replayed)
	}
	status := http.StatusCreated
	if e.Replayed {
		status = http.StatusOK
	}
	h.writeJSON(w, c, status, grantResponse{
		Entry:     historyEntry{ID: e.ID, Delta: e.Delta, Reason: string(e.Reason), Reference: e.Reference, CreatedAt: formatTime(e.Time)},
		Replayed:  e.Replayed,
		Balance:   bal,
		RequestID: c.id,
	})
}
