package stripecheckout

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/validmail/validmail/billing"
	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/store"
)

// Defaults of [Config].
const (
	// DefaultAPIURL is Stripe's API.
	DefaultAPIURL = "https://api.stripe.com"
	// DefaultTolerance is how far an event's signed timestamp may be from
	// now: Stripe's own default.
	DefaultTolerance = 5 * time.Minute
	// DefaultTimeout bounds one call to Stripe, retries included.
	DefaultTimeout = 30 * time.Second
)

// Errors of a [Seller].
var (
	// ErrConfig reports a [Config] that cannot sell.
	ErrConfig = errors.New("stripecheckout: invalid configuration")
	// ErrStripe reports a call to Stripe's API that failed.
	ErrStripe = errors.New("stripecheckout: Stripe request failed")
)

// Config configures a [Seller].
type Config struct {
	// SecretKey is the Stripe API key (sk_live_… or sk_test_…, or a
	// restricted key allowed to write Checkout Sessions); required.
	SecretKey string
	// WebhookSecret is the signing secret of the webhook endpoint
	// (whsec_…); required.
	WebhookSecret string
	// APIURL is where Stripe's API is; default [DefaultAPIURL]. Tests
	// point it at stripe-mock.
	APIURL string
	// Packs are what is sold; at least one, checked by billing.CheckPacks.
	Packs []billing.Pack
	// ProductName names a pack on Stripe's page, after its number of
	// credits: "1,000 <ProductName>". Default "validation credits".
	ProductName string
	// Tolerance is how far an event's timestamp may be from now; default
	// [DefaultTolerance].
	Tolerance time.Duration
	// HTTPClient calls Stripe; default a client timing out after
	// [DefaultTimeout].
	HTTPClient *http.Client
	// Logger receives what goes wrong and every grant; default discards.
	Logger *slog.Logger
	// Accounts puts a buyer on the plan of a pack that names one, when
	// its payment is first granted; required when a pack has a Plan.
	Accounts store.PlanSetter
}

// Seller opens Checkout Sessions and grants what was paid. It is safe for
// concurrent use.
type Seller struct {
	store     billing.Store
	ledger    *credits.Ledger
	accounts  store.PlanSetter
	client    *stripe.Client
	secret    string
	packs     []billing.Pack
	product   string
	tolerance time.Duration
	logger    *slog.Logger
}

// New returns a Seller recording sessions in st and granting with ledger.
// It fails with [ErrConfig] when cfg lacks a key, a signing secret or
// packs, or its packs or API address are not valid.
func New(st billing.Store, ledger *credits.Ledger, cfg *Config) (*Seller, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	switch {
	case st == nil || ledger == nil:
		return nil, fmt.Errorf("%w: a billing.Store and a Ledger are required", ErrConfig)
	case cfg.SecretKey == "":
		return nil, fmt.Errorf("%w: SecretKey is required", ErrConfig)
	case cfg.WebhookSecret == "":
		return nil, fmt.Errorf("%w: WebhookSecret is required", ErrConfig)
	case len(cfg.Packs) == 0:
		return nil, fmt.Errorf("%w: no packs to sell", ErrConfig)
	}
	if err := billing.CheckPacks(cfg.Packs); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if cfg.Accounts == nil && slices.ContainsFunc(cfg.Packs, func(p billing.Pack) bool { return p.Plan != "" }) {
		return nil, fmt.Errorf("%w: a pack sells a plan: Accounts is required", ErrConfig)
	}
	api := cmp.Or(cfg.APIURL, DefaultAPIURL)
	if u, err := url.Parse(api); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("%w: APIURL %q is not an http(s) address", ErrConfig, api)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	logger := cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	backends := stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL:           stripe.String(strings.TrimSuffix(api, "/")),
		HTTPClient:    hc,
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
	})
	packs := slices.Clone(cfg.Packs)
	slices.SortFunc(packs, func(a, b billing.Pack) int { return cmp.Compare(a.Credits, b.Credits) })
	return &Seller{
		store:     st,
		ledger:    ledger,
		accounts:  cfg.Accounts,
		client:    stripe.NewClient(cfg.SecretKey, stripe.WithBackends(backends)),
		secret:    cfg.WebhookSecret,
		packs:     packs,
		product:   cmp.Or(cfg.ProductName, "validation credits"),
		tolerance: cmp.Or(cfg.Tolerance, DefaultTolerance),
		logger:    logger,
	}, nil
}

// Packs returns the packs sold, fewest credits first. The caller must not
// modify it.
func (s *Seller) Packs() []billing.Pack { return s.packs }

// Open creates a Checkout Session selling the pack of p.Credits to
// p.AccountID and records it. A number of credits no pack sells fails
// with billing.ErrUnknownPack before Stripe is asked; Stripe's refusal
// with [ErrStripe]; the store's failure as the store reports it, after the
// session was expired at Stripe.
func (s *Seller) Open(ctx context.Context, p billing.OpenParams) (billing.Session, error) {
	pack, err := billing.FindPack(s.packs, p.Credits)
	if err != nil {
		return billing.Session{}, err
	}
	if p.AccountID == "" || p.SuccessURL == "" || p.CancelURL == "" {
		return billing.Session{}, fmt.Errorf("%w: an account and both return addresses are required", billing.ErrInvalidCheckout)
	}
	params := &stripe.CheckoutSessionCreateParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModePayment)),
		ClientReferenceID: stripe.String(p.AccountID),
		SuccessURL:        stripe.String(p.SuccessURL),
		CancelURL:         stripe.String(p.CancelURL),
		LineItems: []*stripe.CheckoutSessionCreateLineItemParams{{
			Quantity: stripe.Int64(1),
			PriceData: &stripe.CheckoutSessionCreateLineItemPriceDataParams{
				Currency:   stripe.String(pack.Currency),
				UnitAmount: stripe.Int64(pack.Price),
				ProductData: &stripe.CheckoutSessionCreateLineItemPriceDataProductDataParams{
					Name: stripe.String(groupThousands(pack.Credits) + " " + s.product),
				},
			},
		}},
	}
	params.AddMetadata("account_id", p.AccountID)
	params.AddMetadata("credits", strconv.FormatInt(pack.Credits, 10))
	if p.Email != "" {
		params.CustomerEmail = stripe.String(p.Email)
	}
	cs, err := s.client.V1CheckoutSessions.Create(ctx, params)
	if err != nil {
		return billing.Session{}, fmt.Errorf("%w: create session: %w", ErrStripe, err)
	}
	if _, err := s.store.RecordCheckout(ctx, billing.Checkout{ID: cs.ID, AccountID: p.AccountID, Pack: pack}); err != nil {
		// Unrecorded, the session must not take money: expire it, on a
		// context of its own as ctx may be what ended.
		ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultTimeout)
		defer cancel()
		if _, xerr := s.client.V1CheckoutSessions.Expire(ectx, cs.ID, nil); xerr != nil {
			s.logger.ErrorContext(ctx, "stripecheckout: an unrecorded session could not be expired", "session", cs.ID, "err", xerr)
		}
		return billing.Session{}, err
	}
	return billing.Session{ID: cs.ID, URL: cs.URL, Pack: pack}, nil
}

// HandleEvent verifies one event Stripe posted (its body and
// Stripe-Signature header) and grants a paid session's pack. A bad
// signature or an event too old or too far ahead: [billing.ErrSignature]; a body
// that is not an event: [billing.ErrEvent]. An event of another type, an unpaid
// session or one the service did not record are ignored (nil error, the
// reason in the Outcome). The store's or ledger's failures are returned:
// Stripe should deliver the event again.
func (s *Seller) HandleEvent(ctx context.Context, payload []byte, signature string) (billing.Outcome, error) {
	if err := s.checkTimestamp(signature); err != nil {
		return billing.Outcome{}, err
	}
	ev, err := webhook.ConstructEventWithOptions(payload, signature, s.secret, webhook.ConstructEventOptions{
		Tolerance: s.tolerance,
		// Only a session's id and payment status are read, alike in
		// every API version the endpoint may be set to.
		IgnoreAPIVersionMismatch: true,
	})
	switch {
	case errors.Is(err, webhook.ErrNotSigned), errors.Is(err, webhook.ErrInvalidHeader),
		errors.Is(err, webhook.ErrNoValidSignature), errors.Is(err, webhook.ErrTooOld):
		return billing.Outcome{}, fmt.Errorf("%w: %w", billing.ErrSignature, err)
	case err != nil:
		return billing.Outcome{}, fmt.Errorf("%w: %w", billing.ErrEvent, err)
	}
	switch ev.Type {
	case stripe.EventTypeCheckoutSessionCompleted, stripe.EventTypeCheckoutSessionAsyncPaymentSucceeded:
	default:
		return billing.Outcome{Ignored: "event type"}, nil
	}
	var cs stripe.CheckoutSession
	if ev.Data == nil || json.Unmarshal(ev.Data.Raw, &cs) != nil || cs.ID == "" {
		return billing.Outcome{}, fmt.Errorf("%w: %s without a session", billing.ErrEvent, ev.Type)
	}
	if cs.PaymentStatus != stripe.CheckoutSessionPaymentStatusPaid {
		return billing.Outcome{Session: cs.ID, Ignored: "unpaid"}, nil
	}
	return s.grant(ctx, cs.ID)
}

// checkTimestamp refuses a signature dated further ahead than the
// tolerance: the SDK refuses only those too old.
func (s *Seller) checkTimestamp(header string) error {
	for part := range strings.SplitSeq(header, ",") {
		if v, ok := strings.CutPrefix(part, "t="); ok {
			sec, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("%w: timestamp %q", billing.ErrSignature, v)
			}
			if time.Until(time.Unix(sec, 0)) > s.tolerance {
				return fmt.Errorf("%w: timestamp ahead of the clock", billing.ErrSignature)
			}
		}
	}
	return nil
}

// Fulfil asks Stripe for the session id and, when it is paid, grants its
// recorded pack, as an event would: what the page a buyer returns to
// calls, so credits show at once even before Stripe's event arrives. A
// session recorded for another account than accountID is
// billing.ErrNotFound; unpaid, [billing.ErrNotPaid].
func (s *Seller) Fulfil(ctx context.Context, accountID, id string) (billing.Outcome, error) {
	rec, err := s.store.Checkout(ctx, id)
	if err != nil {
		return billing.Outcome{}, err
	}
	if rec.AccountID != accountID {
		return billing.Outcome{}, billing.ErrNotFound
	}
	cs, err := s.client.V1CheckoutSessions.Retrieve(ctx, id, nil)
	if err != nil {
		return billing.Outcome{}, fmt.Errorf("%w: retrieve session: %w", ErrStripe, err)
	}
	if cs.PaymentStatus != stripe.CheckoutSessionPaymentStatusPaid {
		return billing.Outcome{Session: id, Ignored: "unpaid"}, billing.ErrNotPaid
	}
	return s.grant(ctx, id)
}

// grant grants the pack recorded for session id, once.
func (s *Seller) grant(ctx context.Context, id string) (billing.Outcome, error) {
	out := billing.Outcome{Session: id}
	rec, err := s.store.Checkout(ctx, id)
	if errors.Is(err, billing.ErrNotFound) {
		s.logger.WarnContext(ctx, "stripecheckout: a paid session the service did not open; nothing granted", "session", id)
		out.Ignored = "unknown session"
		return out, nil
	}
	if err != nil {
		return out, err
	}
	e, err := s.ledger.GrantCredits(ctx, credits.GrantParams{
		AccountID:      rec.AccountID,
		Credits:        rec.Pack.Credits,
		Note:           "purchase " + id,
		IdempotencyKey: billing.GrantKey(id),
	})
	if err != nil {
		return out, err
	}
	if !e.Replayed {
		s.logger.InfoContext(ctx, "stripecheckout: credits granted", "session", id, "account", rec.AccountID, "credits", rec.Pack.Credits)
		// The plan follows the first grant only: a replay, or the buyer
		// reloading the return page, never undoes an operator's change.
		if p := rec.Pack.Plan; p != "" {
			if err := s.accounts.SetPlan(ctx, rec.AccountID, p); err != nil {
				s.logger.ErrorContext(ctx, "stripecheckout: a paid pack's plan could not be set; set it by hand", "session", id, "account", rec.AccountID, "plan", p, "err", err)
			}
		}
	}
	out.Granted = e
	return out, nil
}

// Receipt returns the address of Stripe's receipt for a paid session of
// the account: billing.ErrNotFound for a session of another account or
// never opened, [billing.ErrNotPaid] while it has no charge.
func (s *Seller) Receipt(ctx context.Context, accountID, id string) (string, error) {
	rec, err := s.store.Checkout(ctx, id)
	if err != nil {
		return "", err
	}
	if rec.AccountID != accountID {
		return "", billing.ErrNotFound
	}
	params := &stripe.CheckoutSessionRetrieveParams{}
	params.AddExpand("payment_intent.latest_charge")
	cs, err := s.client.V1CheckoutSessions.Retrieve(ctx, id, params)
	if err != nil {
		return "", fmt.Errorf("%w: retrieve session: %w", ErrStripe, err)
	}
	if cs.PaymentIntent == nil || cs.PaymentIntent.LatestCharge == nil || cs.PaymentIntent.LatestCharge.ReceiptURL == "" {
		return "", billing.ErrNotPaid
	}
	return cs.PaymentIntent.LatestCharge.ReceiptURL, nil
}

// groupThousands formats n with commas: 10000 → "10,000".
func groupThousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
