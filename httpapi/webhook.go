package httpapi

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/validmail/validmail/httpapi/internal/buckets"
	"github.com/validmail/validmail/webhook"
)

// Limits of GET /api/v1/webhook/deliveries.
const (
	// DefaultDeliveriesLimit is the number of deliveries listed when the
	// request names no limit.
	DefaultDeliveriesLimit = webhook.DefaultListLimit
	// MaxDeliveriesLimit is the largest limit honoured; larger ones are
	// lowered to it.
	MaxDeliveriesLimit = 500
)

// webhookRoutes holds what the /api/v1/webhook routes need.
type webhookRoutes struct {
	endpoints webhook.Endpoints
	outbox    webhook.Outbox
	sender    WebhookSender
	changed   func(accountID string)
}

// forget tells the host that the account's endpoint changed.
func (wr *webhookRoutes) forget(accountID string) {
	if wr.changed != nil {
		wr.changed(accountID)
	}
}

type putWebhookRequest struct {
	URL          *string   `json:"url"`
	Enabled      *bool     `json:"enabled"`
	Events       *[]string `json:"events"`
	RotateSecret bool      `json:"rotate_secret"`
}

// webhookView is an endpoint as the API shows it: never a secret, except
// the one just generated.
type webhookView struct {
	URL     string `json:"url"`
	Enabled bool   `json:"enabled"`
	// Events lists the event types the endpoint receives.
	Events         []string `json:"events"`
	DisabledReason *string  `json:"disabled_reason"`
	// PreviousSecretExpiresAt is when the last replaced secret stops
	// signing; null when no replaced secret signs any more.
	PreviousSecretExpiresAt *string `json:"previous_secret_expires_at"`
	CreatedAt               string  `json:"created_at"`
	UpdatedAt               string  `json:"updated_at"`
}

func viewWebhook(ep webhook.Endpoint, now time.Time) webhookView {
	v := webhookView{
		URL:       ep.URL,
		Enabled:   ep.Enabled,
		Events:    ep.Events,
		CreatedAt: formatTime(ep.CreatedAt),
		UpdatedAt: formatTime(ep.UpdatedAt),
	}
	if len(v.Events) == 0 {
		v.Events = webhook.EventTypes
	}
	if ep.DisabledReason != "" {
		v.DisabledReason = &ep.DisabledReason
	}
	var last time.Time
	for _, p := range ep.PreviousSecrets {
		if now.Before(p.ExpiresAt) && p.ExpiresAt.After(last) {
			last = p.ExpiresAt
		}
	}
	v.PreviousSecretExpiresAt = formatTimePtr(last)
	return v
}

type webhookResponse struct {
	webhookView
	// Secret is set only when it was just generated: at creation and
	// rotation.
	Secret    string `json:"secret,omitempty"`
	RequestID string `json:"requestId"`
}

type attemptView struct {
	At         string  `json:"at"`
	DurationMS int64   `json:"duration_ms"`
	StatusCode *int    `json:"status_code"`
	Error      *string `json:"error"`
	URL        string  `json:"url"`
}

func viewAttempt(a webhook.Attempt) attemptView {
	v := attemptView{At: formatTime(a.At), DurationMS: a.Duration.Milliseconds(), URL: a.URL}
	if a.StatusCode != 0 {
		v.StatusCode = &a.StatusCode
	}
	if a.Error != "" {
		v.Error = &a.Error
	}
	return v
}

type testWebhookResponse struct {
	EventID string `json:"event_id"`
	// Success reports a 2xx answer.
	Success bool `json:"success"`
	attemptView
	RequestID string `json:"requestId"`
}

type deliveryView struct {
	EventID   string  `json:"event_id"`
	Type      string  `json:"type"`
	JobID     *string `json:"job_id"`
	State     string  `json:"state"`
	CreatedAt string  `json:"created_at"`
	// The last attempt, flattened; null before the first.
	StatusCode    *int          `json:"status_code"`
	Error         *string       `json:"error"`
	AttemptedAt   *string       `json:"attempted_at"`
	NextAttemptAt *string       `json:"next_attempt_at"`
	FinishedAt    *string       `json:"finished_at"`
	Reason        *string       `json:"reason"`
	Attempts      []attemptView `json:"attempts"`
}

func viewDelivery(d webhook.Delivery) deliveryView {
	v := deliveryView{
		EventID:       d.ID,
		Type:          d.Type,
		State:         string(d.State),
		CreatedAt:     formatTime(d.CreatedAt),
		NextAttemptAt: formatTimePtr(d.NextAttempt),
		FinishedAt:    formatTimePtr(d.FinishedAt),
		Attempts:      make([]attemptView, len(d.Attempts)),
	}
	if d.State != webhook.StatePending {
		v.NextAttemptAt = nil
	}
	if d.JobID != "" {
		v.JobID = &d.JobID
	}
	if d.Reason != "" {
		v.Reason = &d.Reason
	}
	for i, a := range d.Attempts {
		v.Attempts[i] = viewAttempt(a)
	}
	if n := len(v.Attempts); n > 0 {
		last := v.Attempts[n-1]
		v.StatusCode, v.Error, v.AttemptedAt = last.StatusCode, last.Error, &last.At
	}
	return v
}

type deliveriesResponse struct {
	Deliveries []deliveryView `json:"deliveries"`
	// NextCursor fetches the next, older page; nil on the last one.
	NextCursor *string `json:"next_cursor"`
	RequestID  string  `json:"requestId"`
}

// encodeCursor makes an opaque cursor of a delivery's position.
func encodeCursor(p webhook.Position) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(p.CreatedAt.UnixMicro(), 10) + ":" + p.ID))
}

// decodeCursor reads a cursor encodeCursor made, and refuses one that no
// position could have made: an id that is not printable ASCII or a time
// outside the years 1970 to 9999, which a store would fail on.
func decodeCursor(s string) (webhook.Position, bool) {
	if len(s) > maxCursor {
		return webhook.Position{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return webhook.Position{}, false
	}
	us, id, ok := strings.Cut(string(b), ":")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil || id == "" || n < 0 || n > maxCursorMicros || !printableASCII(id) {
		return webhook.Position{}, false
	}
	return webhook.Position{CreatedAt: time.UnixMicro(n).UTC(), ID: id}, true
}

// noWebhook answers 404 for an account without an endpoint.
func noWebhook(w http.ResponseWriter, c *call) {
	writeProblem(w, c, CodeNotFound, "No webhook endpoint is configured; create one with PUT /api/v1/webhook.")
}

// getWebhook serves GET /api/v1/webhook.
func (h *Handler) getWebhook(w http.ResponseWriter, r *http.Request, c *call) {
	ep, err := h.hooks.endpoints.GetEndpoint(r.Context(), c.key.AccountID)
	if err != nil {
		if errors.Is(err, webhook.ErrNotFound) {
			noWebhook(w, c)
			return
		}
		h.backendError(w, c, "get webhook", err)
		return
	}
	h.writeJSON(w, c, http.StatusOK, webhookResponse{webhookView: viewWebhook(ep, h.now()), RequestID: c.id})
}

// putWebhook serves PUT /api/v1/webhook: it creates the endpoint (201,
// with its new secret) or updates it (200), keeping the URL or the
// enabled flag the body leaves out, and rotates the secret on request.
func (h *Handler) putWebhook(w http.ResponseWriter, r *http.Request, c *call) {
	body, ok := h.readBody(w, r, c)
	if !ok {
		return
	}
	var req putWebhookRequest
	if !decodeJSON(w, c, body, &req) {
		return
	}
	if req.URL != nil {
		if err := webhook.ValidateURL(*req.URL); err != nil || !cleanText(*req.URL) {
			writeProblem(w, c, CodeInvalidBody, "The url must be an absolute http or https URL with a host, without user information or fragment, at most 2,048 bytes.")
			return
		}
	}
	if req.Events != nil {
		if len(*req.Events) == 0 || webhook.CheckEventTypes(*req.Events) != nil {
			writeProblem(w, c, CodeInvalidBody, "The events must list one or more of: "+strings.Join(webhook.EventTypes, ", ")+".")
			return
		}
	}
	ctx := r.Context()
	account := c.key.AccountID
	cur, err := h.hooks.endpoints.GetEndpoint(ctx, account)
	exists := err == nil
	if err != nil && !errors.Is(err, webhook.ErrNotFound) {
		h.backendError(w, c, "get webhook", err)
		return
	}
	p := webhook.PutEndpointParams{AccountID: account, Enabled: true, Now: h.now()}
	if exists {
		p.URL, p.Enabled, p.Events = cur.URL, cur.Enabled, cur.Events
	} else {
		if req.URL == nil {
			writeProblem(w, c, CodeInvalidBody, "The body must name the url of the new endpoint.")
			return
		}
		p.Secret = webhook.NewSecret()
	}
	if req.URL != nil {
		p.URL = *req.URL
	}
	if req.Enabled != nil {
		p.Enabled = *req.Enabled
	}
	if req.Events != nil {
		p.Events = webhook.NormalizeEvents(*req.Events)
	}
	ep, created, err := h.hooks.endpoints.PutEndpoint(ctx, p)
	if err != nil {
		h.backendError(w, c, "put webhook", err)
		return
	}
	if created {
		h.addAudit(ctx, c, "webhook.created", ep.URL)
	} else {
		h.addAudit(ctx, c, "webhook.changed", ep.URL)
	}
	defer h.hooks.forget(account)
	resp := webhookResponse{RequestID: c.id}
	status := http.StatusOK
	switch {
	case created:
		// A concurrent PUT may have created it first; then ours updated
		// it and p.Secret was not stored.
		status, resp.Secret = http.StatusCreated, ep.Secret
	case req.RotateSecret:
		now := h.now()
		ep, err = h.hooks.endpoints.RotateSecret(ctx, webhook.RotateSecretParams{
			AccountID:         account,
			Secret:            webhook.NewSecret(),
			Now:               now,
			PreviousExpiresAt: now.Add(webhook.RotationGrace),
		})
		if err != nil {
			if errors.Is(err, webhook.ErrNotFound) {
				noWebhook(w, c) // deleted in between
				return
			}
			h.backendError(w, c, "rotate webhook secret", err)
			return
		}
		h.addAudit(ctx, c, "webhook.secret_rotated", ep.URL)
		resp.Secret = ep.Secret
	}
	resp.webhookView = viewWebhook(ep, h.now())
	h.writeJSON(w, c, status, resp)
}

// deleteWebhook serves DELETE /api/v1/webhook and answers the endpoint
// it removed. Pending deliveries then die with the reason "no webhook
// endpoint configured".
func (h *Handler) deleteWebhook(w http.ResponseWriter, r *http.Request, c *call) {
	ctx := r.Context()
	account := c.key.AccountID
	ep, err := h.hooks.endpoints.GetEndpoint(ctx, account)
	if err == nil {
		err = h.hooks.endpoints.DeleteEndpoint(ctx, account)
	}
	if err != nil {
		if errors.Is(err, webhook.ErrNotFound) {
			noWebhook(w, c)
			return
		}
		h.backendError(w, c, "delete webhook", err)
		return
	}
	h.addAudit(ctx, c, "webhook.deleted", ep.URL)
	h.hooks.forget(account)
	h.writeJSON(w, c, http.StatusOK, webhookResponse{webhookView: viewWebhook(ep, h.now()), RequestID: c.id})
}

// testWebhook serves POST /api/v1/webhook/test: one signed webhook.test
// message, sent now and outside the outbox (it is not retried and not
// listed in the deliveries), even to a disabled endpoint. The answer is
// 200 whatever the receiver said; the attempt tells.
func (h *Handler) testWebhook(w http.ResponseWriter, r *http.Request, c *call) {
	ctx := r.Context()
	ep, err := h.hooks.endpoints.GetEndpoint(ctx, c.key.AccountID)
	if err != nil {
		if errors.Is(err, webhook.ErrNotFound) {
			noWebhook(w, c)
			return
		}
		h.backendError(w, c, "get webhook", err)
		return
	}
	if !h.testAllowed(w, r, c) {
		return
	}
	ev := webhook.NewTestEvent(c.key.AccountID, h.now())
	a := h.hooks.sender.Send(ctx, ep, ev)
	h.writeJSON(w, c, http.StatusOK, testWebhookResponse{
		EventID:     ev.ID,
		Success:     a.StatusCode >= 200 && a.StatusCode < 300,
		attemptView: viewAttempt(a),
		RequestID:   c.id,
	})
}

// testAllowed takes a token from the account's test-event bucket and
// answers 429 when it is empty. A limiter that fails lets the test
// through, as for every limit.
func (h *Handler) testAllowed(w http.ResponseWriter, r *http.Request, c *call) bool {
	if h.testLim.Unlimited() {
		return true
	}
	d, err := h.limiter.Allow(r.Context(), buckets.WebhookTest(c.key.AccountID), h.testLim)
	if err != nil {
		if h.logger != nil {
			h.logger.WarnContext(r.Context(), "httpapi: rate limiter failed; test event let through", "request_id", c.id, "err", err)
		}
		return true
	}
	if d.Allowed {
		return true
	}
	w.Header().Set("Retry-After", strconv.FormatInt(max(1, ceilSeconds(d.RetryAfter)), 10))
	writeProblem(w, c, CodeRateLimited, "Too many test events for this account; retry later.")
	return false
}

// webhookDeliveries serves GET /api/v1/webhook/deliveries?limit=N: the
// account's most recent deliveries, newest first, with their attempts.
// They are listed whether or not an endpoint exists now.
func (h *Handler) webhookDeliveries(w http.ResponseWriter, r *http.Request, c *call) {
	limit := DefaultDeliveriesLimit
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			writeProblem(w, c, CodeInvalidBody, "The limit query parameter must be a positive integer.")
			return
		}
		limit = min(n, MaxDeliveriesLimit)
	}
	p := webhook.ListParams{AccountID: c.key.AccountID, Limit: limit + 1}
	if s := r.URL.Query().Get("cursor"); s != "" {
		pos, ok := decodeCursor(s)
		if !ok {
			writeProblem(w, c, CodeInvalidBody, "The cursor query parameter is not one this API gave.")
			return
		}
		p.Before = &pos
	}
	ds, err := h.hooks.outbox.Deliveries(r.Context(), p)
	if err != nil {
		h.backendError(w, c, "list deliveries", err)
		return
	}
	resp := deliveriesResponse{RequestID: c.id}
	if len(ds) > limit {
		// One more than asked for says there is a next page.
		ds = ds[:limit]
		next := encodeCursor(ds[limit-1].Position())
		resp.NextCursor = &next
	}
	resp.Deliveries = make([]deliveryView, len(ds))
	for i, d := range ds {
		resp.Deliveries[i] = viewDelivery(d)
	}
	h.writeJSON(w, c, http.StatusOK, resp)
}
