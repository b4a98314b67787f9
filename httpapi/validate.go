package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
)

// validate serves GET /validate: charge 1, validate, refund an UNKNOWN.
func (h *Handler) validate(w http.ResponseWriter, r *http.Request, c *call) {
	email, ok := cleanAddress(r.URL.Query().Get("email"))
	if !ok {
		writeProblem(w, c, CodeAddressTooLong, "The address is longer than "+strconv.Itoa(MaxAddressBytes)+" bytes.")
		return
	}
	if email == "" {
		writeProblem(w, c, CodeMissingEmail, "The email query parameter is required.")
		return
	}
	ctx := r.Context()
	acct := c.key.AccountID
	// The charge names the request in its reference. It needs no
	// idempotency key: the request id is the server's own, never sent
	// twice, and a key would be kept for ever. The refund, which may be
	// retried, has one.
	chargeKey := "validate:" + c.id
	charge := credits.Change{AccountID: acct, Delta: -1, Reason: credits.ReasonCharge, Reference: chargeKey}
	if _, err := h.ledger.Apply(ctx, charge); err != nil {
		h.chargeError(w, c, err)
		return
	}
	res, err := h.validateOrRefund(ctx, c, chargeKey, email)
	if err != nil {
		h.refund(ctx, c, chargeKey)
		h.backendError(w, c, "validate", err)
		return
	}
	if h.metrics != nil {
		h.metrics.credits.Add(1)
	}
	if res.Confidence.Status == emailcheck.StatusUnknown {
		h.refund(ctx, c, chargeKey)
		if h.metrics != nil {
			h.metrics.refunds.Add(1)
		}
	}
	if h.metrics != nil {
		h.metrics.validation(res.Confidence.Status)
	}
	if h.usage != nil {
		// Counted beside the charge, not with it: a lost count costs a
		// statistic, never a credit.
		if err := h.usage.AddUsage(ctx, c.key.AccountID, h.now(), string(res.Confidence.Status), 1); err != nil && h.logger != nil {
			h.logger.WarnContext(ctx, "usage count", "request_id", c.id, "err", err)
		}
	}
	res.Meta.Source = emailcheck.SourceAPI
	res.Meta.LatencyMS = h.now().Sub(c.start).Milliseconds()
	h.writeValidation(w, c, &res)
}

// writeValidation answers 200 with res and the request id: the fields of
// res, then "requestId", as writeJSON would write a struct embedding
// the result beside a RequestID field, encoded without reflection.
func (h *Handler) writeValidation(w http.ResponseWriter, c *call, res *emailcheck.Result) {
	buf := h.buffer()
	defer h.release(buf)
	b := res.AppendJSON(buf.AvailableBuffer())
	b = append(b[:len(b)-1], `,"requestId":"`...) // the result's closing brace reopened
	b = append(b, c.id...)                        // a UUID: nothing to escape
	b = append(b, "\"}\n"...)
	buf.Write(b)
	h.writeBody(w, http.StatusOK, buf.Bytes())
}

// validateOrRefund runs the validator; should it panic, the credit charged
// under chargeKey is refunded before the panic goes on to the handler's
// recovery, so a 500 never keeps the caller's credit.
func (h *Handler) validateOrRefund(ctx context.Context, c *call, chargeKey, email string) (emailcheck.Result, error) {
	done := false
	defer func() {
		if !done {
			h.refund(ctx, c, chargeKey)
		}
	}()
	res, err := h.v.Validate(ctx, email, emailcheck.WithSource(emailcheck.SourceAPI), emailcheck.WithAccount(c.key.AccountID))
	done = true
	return res, err
}

// refund gives back the credit charged under chargeKey. A failure is
// logged: the response already says what the caller gets.
func (h *Handler) refund(ctx context.Context, c *call, chargeKey string) {
	ctx = context.WithoutCancel(ctx)
	if _, err := h.ledger.Refund(ctx, c.key.AccountID, 1, "refund:"+chargeKey); err != nil && h.logger != nil {
		h.logger.ErrorContext(ctx, "httpapi: refund failed", "request_id", c.id, "account_id", c.key.AccountID, "err", err)
	}
}

// chargeError answers a refused or failed charge.
func (h *Handler) chargeError(w http.ResponseWriter, c *call, err error) {
	var ie *credits.InsufficientError
	if errors.As(err, &ie) {
		bal, req := ie.Balance, ie.Required
		writeProblemDoc(w, c, problem{
			Code:     CodeInsufficientCredits,
			Detail:   "The balance does not cover this request.",
			Balance:  &bal,
			Required: &req,
		})
		return
	}
	h.backendError(w, c, "charge", err)
}
