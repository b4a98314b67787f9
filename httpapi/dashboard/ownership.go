package dashboard

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/validmail/validmail/httpapi/dashboard/mail"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/webhook"
)

// Anyone may sign up with any address and a password of their own, so
// until the address is confirmed an account proves nothing about who
// holds it: such an account is inert (the route table, routes.go, lets
// it sign in and see where it stands, nothing more). The mailed links
// prove it: following the confirmation link (with the sign-up password)
// or the reset link shows that the requester reads the address's mail.
// Then whatever the account held before (API keys, the webhook endpoint
// and its secret, sessions and known devices, a list waiting for its
// confirmation) may be a squatter's, left to outlive the confirmation:
// it is removed, unless the one following the link ticks "keep" (field
// keep=1), and the address is mailed what was there.

// holdings is what an account held when its address was proven.
type holdings struct {
	Keys     []store.Key // the active keys
	Endpoint string      // the webhook endpoint's URL; "" if none
}

func (h holdings) empty() bool { return len(h.Keys) == 0 && h.Endpoint == "" }

// describe lists the holdings in words, one a line.
func (h holdings) describe() string {
	var b strings.Builder
	for _, k := range h.Keys {
		fmt.Fprintf(&b, "- API key %q (%s…), created %s\n", k.Name, k.Prefix, formatTime(k.CreatedAt))
	}
	if h.Endpoint != "" {
		fmt.Fprintf(&b, "- the webhook endpoint %s and its signing secret\n", h.Endpoint)
	}
	return b.String()
}

// proveOwnership is run when a mailed link proves that the requester
// reads the account's mail. An unconfirmed account is confirmed (its
// signup credits granted) and, unless keep, everything it held is
// removed: every session and known device but keepSession (the stored
// id of the requester's own session, "" for none), its keys, its webhook
// endpoint, a list waiting here. They go before the confirmation, so
// that no session of the squatter's is left to act once the account is
// confirmed and a failure leaves the account unconfirmed for a retry,
// and once more after, for what a request under way then made. The address is mailed what was there. It
// returns the holdings and whether the account was unconfirmed; a
// confirmed account is left as it is.
func (d *Dashboard) proveOwnership(ctx context.Context, accountID, keepSession string, keep bool) (holdings, bool, error) {
	a, err := d.cfg.Accounts.GetAccount(ctx, accountID)
	if err != nil {
		return holdings{}, false, err
	}
	if !a.Unconfirmed {
		return holdings{}, false, nil
	}
	held, err := d.holdings(ctx, accountID)
	if err != nil {
		return holdings{}, true, err
	}
	if !keep {
		// While the account is unconfirmed, so that a failure here
		// leaves it so, and a retry of the link does it all again.
		if err := d.removeHoldings(ctx, accountID, keepSession); err != nil {
			return held, true, err
		}
	}
	if _, err := d.cfg.Accounts.ConfirmAccount(ctx, accountID); err != nil {
		return held, true, err
	}
	if !keep {
		// Once more, for what a request under way during the first pass
		// made.
		if err := d.removeHoldings(ctx, accountID, keepSession); err != nil {
			d.cfg.Logger.ErrorContext(ctx, "dashboard: holdings of a proven account not removed again", "account_id", accountID, "err", err)
		}
	}
	if !held.empty() {
		d.tellHoldings(ctx, a, held, keep)
	}
	d.cfg.Logger.InfoContext(ctx, "dashboard: address proven", "account_id", accountID,
		"keys", len(held.Keys), "webhook", held.Endpoint != "", "kept", keep)
	return held, true, nil
}

// holdings reads what the account holds.
func (d *Dashboard) holdings(ctx context.Context, accountID string) (holdings, error) {
	var h holdings
	keys, err := d.cfg.Accounts.ListKeys(ctx, accountID)
	if err != nil {
		return h, err
	}
	for _, k := range keys {
		if !k.Revoked() {
			h.Keys = append(h.Keys, k)
		}
	}
	if d.cfg.Endpoints != nil {
		ep, err := d.cfg.Endpoints.GetEndpoint(ctx, accountID)
		switch {
		case err == nil:
			h.Endpoint = ep.URL
		case !errors.Is(err, webhook.ErrNotFound):
			return h, err
		}
	}
	return h, nil
}

// removeHoldings removes the account's sessions and devices but
// keepSession, its active keys and its webhook endpoint.
func (d *Dashboard) removeHoldings(ctx context.Context, accountID, keepSession string) error {
	if err := d.cfg.Sessions.DeleteAccountSessions(ctx, accountID, keepSession); err != nil {
		return err
	}
	keys, err := d.cfg.Accounts.ListKeys(ctx, accountID)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.Revoked() {
			continue
		}
		if err := d.cfg.Accounts.RevokeKey(ctx, accountID, k.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	if d.cfg.Endpoints != nil {
		err := d.cfg.Endpoints.DeleteEndpoint(ctx, accountID)
		if err != nil && !errors.Is(err, webhook.ErrNotFound) {
			return err
		}
		d.endpointChanged(accountID)
	}
	// A list waiting for its confirmation is named by a token only its
	// uploader's page holds, and that session is gone: it can no longer
	// be confirmed, and expires with the waiting lists' lifetime.
	return nil
}

// tellHoldings mails the account's address what it held when the address
// was proven, and whether it was kept.
func (d *Dashboard) tellHoldings(ctx context.Context, a store.Account, held holdings, kept bool) {
	body := "Hello,\n\nYour email address is now confirmed for your validmail account. " +
		"Before that, the account held:\n\n" + held.describe() + "\n"
	if kept {
		body += "You chose to keep them. If you did not set them up yourself, remove them now: " +
			"whoever did could use them.\n"
	} else {
		body += "As anyone can sign up with an address they do not own, they were removed, with every other " +
			"session: create new keys and set the webhook again if you need them.\n"
	}
	d.send(ctx, mail.Message{To: a.Email, Subject: "What your validmail account held before you confirmed it", Body: body})
}

// holdingsNote is the flash that tells the one who proved the address
// what was there.
func holdingsNote(held holdings, kept bool) string {
	if held.empty() {
		return ""
	}
	var parts []string
	if n := len(held.Keys); n > 0 {
		parts = append(parts, fmt.Sprintf("%d API key(s)", n))
	}
	if held.Endpoint != "" {
		parts = append(parts, "the webhook endpoint "+held.Endpoint)
	}
	if kept {
		return "Kept what the account held before its confirmation: " + strings.Join(parts, ", ") + "."
	}
	return "Removed what the account held before its confirmation: " + strings.Join(parts, ", ") + ". We mailed you the details."
}
