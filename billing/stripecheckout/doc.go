// Package stripecheckout sells credit packs through Stripe Checkout,
// with Stripe's own Go SDK (github.com/stripe/stripe-go).
//
// [Seller.Open] creates a Checkout Session of one pack for an account and
// records it (billing.Store) before its address is handed out; a session
// that cannot be recorded is expired at Stripe, so nobody can pay for it.
// Credits are granted by [Seller.HandleEvent], given Stripe's signed
// events (checkout.session.completed and
// checkout.session.async_payment_succeeded with payment_status "paid"),
// and by [Seller.Fulfil], which the page a buyer returns to calls with the
// session's id: both grant the pack recorded for that session, to the
// account recorded with it, as one ledger grant whose idempotency key is
// billing.GrantKey(session id). So a replayed or duplicated event, two
// instances receiving it, or the return page racing the event grant once;
// a session the service did not record grants nothing, whatever the
// event says; nothing is read from an event's metadata. A pack that names
// a plan puts the buyer on it with that first grant (Config.Accounts),
// never again on a replay.
//
// The signature of an event (its Stripe-Signature header) is checked with
// the endpoint's signing secret and a tolerance on its timestamp
// ([Config.Tolerance], 5 minutes): an event older, or dated further in
// the future, is refused as a replay (billing.ErrSignature).
//
// The HTTP side (POST /billing/stripe/webhook, POST /api/v1/billing/checkout,
// the console's page) is httpapi's and the console's, over any seller.
package stripecheckout
