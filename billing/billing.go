package billing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/store"
)

// Errors of the package and of every [Store].
var (
	// ErrNotFound reports a checkout the store never recorded.
	ErrNotFound = errors.New("billing: checkout not found")
	// ErrCheckoutExists reports a checkout id recorded before.
	ErrCheckoutExists = errors.New("billing: checkout already recorded")
	// ErrUnknownPack reports a number of credits no configured pack sells.
	ErrUnknownPack = errors.New("billing: no pack of that many credits")
	// ErrInvalidPacks reports a list of packs that cannot be sold: see
	// [CheckPacks].
	ErrInvalidPacks = errors.New("billing: invalid credit packs")
	// ErrSignature reports an event whose signature does not prove it
	// came from the payment provider, or that came too long ago.
	ErrSignature = errors.New("billing: bad event signature")
	// ErrEvent reports a signed event whose body could not be read.
	ErrEvent = errors.New("billing: malformed event")
	// ErrNotPaid reports a checkout found unpaid.
	ErrNotPaid = errors.New("billing: checkout not paid")
	// ErrInvalidCheckout reports a checkout a store refuses to record:
	// an empty or too long id or account, or a pack that is not one.
	ErrInvalidCheckout = errors.New("billing: invalid checkout")
)

// MaxCheckoutIDBytes bounds a checkout's id (Stripe's are about 70 bytes).
const MaxCheckoutIDBytes = 255

// MaxPacks bounds how many packs an operator may offer.
const MaxPacks = 20

// MaxPackCredits bounds the credits of one pack.
const MaxPackCredits = 1_000_000_000

// Pack is a number of credits sold at one price.
type Pack struct {
	// Credits is what the pack grants: 1 to 1,000,000,000.
	Credits int64
	// Price is what the pack costs, in the currency's smallest unit
	// (cents for usd): at least 1.
	Price int64
	// Currency is the ISO 4217 code, lower-case ("usd", "eur").
	Currency string
	// Plan, when set, is the plan the buyer's account is put on when the
	// pack is paid (store.CheckPlan names); empty leaves the plan alone.
	Plan string
}

// String formats the pack as the operator writes it: "1000:900:usd", or
// "10000:7500:usd:pro" with a plan.
func (p Pack) String() string {
	s := fmt.Sprintf("%d:%d:%s", p.Credits, p.Price, p.Currency)
	if p.Plan != "" {
		s += ":" + p.Plan
	}
	return s
}

// ParsePacks reads packs written as a comma-separated list of
// CREDITS:PRICE:CURRENCY[:PLAN] ("1000:900:usd,10000:7500:usd:pro"), the
// form of the service's flag, and checks them with [CheckPacks]. An empty string is
// no packs.
func ParsePacks(s string) ([]Pack, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var packs []Pack
	for item := range strings.SplitSeq(s, ",") {
		var p Pack
		parts := strings.Split(strings.TrimSpace(item), ":")
		if len(parts) != 3 && len(parts) != 4 {
			return nil, fmt.Errorf("%w: %q is not CREDITS:PRICE:CURRENCY[:PLAN]", ErrInvalidPacks, item)
		}
		if len(parts) == 4 {
			p.Plan = parts[3]
		}
		if _, err := fmt.Sscan(parts[0], &p.Credits); err != nil {
			return nil, fmt.Errorf("%w: credits %q", ErrInvalidPacks, parts[0])
		}
		if _, err := fmt.Sscan(parts[1], &p.Price); err != nil {
			return nil, fmt.Errorf("%w: price %q", ErrInvalidPacks, parts[1])
		}
		p.Currency = strings.ToLower(parts[2])
		packs = append(packs, p)
	}
	if err := CheckPacks(packs); err != nil {
		return nil, err
	}
	return packs, nil
}

// CheckPacks returns an error matching [ErrInvalidPacks] unless every
// pack has 1 to 1,000,000,000 credits, a positive price and a three-letter
// currency, no two packs sell the same number of credits, and there are
// at most [MaxPacks].
func CheckPacks(packs []Pack) error {
	if len(packs) > MaxPacks {
		return fmt.Errorf("%w: %d packs, at most %d", ErrInvalidPacks, len(packs), MaxPacks)
	}
	seen := make(map[int64]bool, len(packs))
	for _, p := range packs {
		switch {
		case p.Credits < 1 || p.Credits > MaxPackCredits:
			return fmt.Errorf("%w: %v: credits must be 1 to 1000000000", ErrInvalidPacks, p)
		case p.Price < 1:
			return fmt.Errorf("%w: %v: the price must be positive", ErrInvalidPacks, p)
		case len(p.Currency) != 3 || strings.Trim(p.Currency, "abcdefghijklmnopqrstuvwxyz") != "":
			return fmt.Errorf("%w: %v: the currency must be three lower-case letters", ErrInvalidPacks, p)
		case p.Plan != "" && store.CheckPlan(p.Plan) != nil:
			return fmt.Errorf("%w: %v: bad plan name", ErrInvalidPacks, p)
		case seen[p.Credits]:
			return fmt.Errorf("%w: two packs of %d credits", ErrInvalidPacks, p.Credits)
		}
		seen[p.Credits] = true
	}
	return nil
}

// FindPack returns the pack of packs selling credits, or an error
// matching [ErrUnknownPack].
func FindPack(packs []Pack, credits int64) (Pack, error) {
	i := slices.IndexFunc(packs, func(p Pack) bool { return p.Credits == credits })
	if i < 0 {
		return Pack{}, fmt.Errorf("%w: %d", ErrUnknownPack, credits)
	}
	return packs[i], nil
}

// Checkout is a payment page the service opened for an account to buy a
// pack, as recorded when it was opened.
type Checkout struct {
	// ID is the payment provider's id of the page (Stripe's Checkout
	// Session id), unique in the store.
	ID string
	// AccountID is the account that will receive the credits.
	AccountID string
	// Pack is what was offered: the credits granted once it is paid.
	Pack Pack
	// CreatedAt is when the checkout was recorded, by the store's clock.
	CreatedAt time.Time
}

// Check returns an error matching [ErrInvalidCheckout] for a checkout no
// store records.
func (c Checkout) Check() error {
	switch {
	case c.ID == "" || len(c.ID) > MaxCheckoutIDBytes || !utf8.ValidString(c.ID):
		return fmt.Errorf("%w: id %q", ErrInvalidCheckout, c.ID)
	case c.AccountID == "" || len(c.AccountID) > MaxCheckoutIDBytes:
		return fmt.Errorf("%w: account %q", ErrInvalidCheckout, c.AccountID)
	}
	if err := CheckPacks([]Pack{c.Pack}); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidCheckout, err)
	}
	return nil
}

// GrantPrefix starts the idempotency key and the note of every grant of a
// paid checkout.
const GrantPrefix = "checkout:"

// GrantKey returns the idempotency key of the grant paying checkout id:
// one per checkout, so that the grant is applied once however often it is
// asked for.
func GrantKey(id string) string { return GrantPrefix + id }

// CheckoutOfGrant returns the checkout id a grant's idempotency key names,
// and whether it names one.
func CheckoutOfGrant(idempotencyKey string) (string, bool) {
	id, ok := strings.CutPrefix(idempotencyKey, GrantPrefix)
	return id, ok && id != ""
}

// Store records checkouts.
//
// A Store may be called concurrently from many goroutines and, for shared
// backends, from many processes; each method is atomic on its own. Every
// method honours ctx: when ctx ends first it returns an error wrapping
// ctx.Err(). A backend's own failure wraps store.ErrUnavailable.
type Store interface {
	// RecordCheckout records c, setting its CreatedAt by the store's
	// clock, and returns it. An id recorded before: [ErrCheckoutExists],
	// the first record kept. A checkout failing [Checkout.Check]: an error
	// matching [ErrInvalidCheckout], checked before the store is asked.
	RecordCheckout(ctx context.Context, c Checkout) (Checkout, error)
	// Checkout returns the checkout recorded with id, or [ErrNotFound].
	Checkout(ctx context.Context, id string) (Checkout, error)
}

// OpenParams describes a checkout for a seller's Open.
type OpenParams struct {
	// AccountID receives the credits; required.
	AccountID string
	// Email, when set, fills in the buyer's address on the payment page.
	Email string
	// Credits names the pack; it must be one of the seller's packs.
	Credits int64
	// SuccessURL is where the payment page sends the buyer after paying;
	// the text {CHECKOUT_SESSION_ID} in it becomes the checkout's id.
	// Required.
	SuccessURL string
	// CancelURL is where the buyer goes back without paying. Required.
	CancelURL string
}

// Session is an opened checkout: where the buyer pays.
type Session struct {
	// ID is the checkout's id (Stripe's Checkout Session id).
	ID string
	// URL is the payment page.
	URL string
	// Pack is what the session sells.
	Pack Pack
}

// Outcome is what a seller's handling of an event or return did.
type Outcome struct {
	// Session is the checkout the event was about, if any.
	Session string
	// Granted is the grant's entry when credits were granted, or found
	// granted before (its Replayed set); zero otherwise.
	Granted credits.Entry
	// Ignored says why nothing was granted: "event type", "unpaid",
	// "unknown session"; empty when something was.
	Ignored string
}
