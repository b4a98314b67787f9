// Package billing is what the service sells: credit packs, the checkouts
// opened to buy them, and the [Store] that remembers each checkout so
// that only what the service itself sold is ever granted.
//
// The package holds no payment provider's code: billing/stripecheckout
// opens Stripe Checkout Sessions and fulfils them from Stripe's signed
// events. The rules a [Store] keeps are checked by billing/billingtest
// on every backend:
//
//   - a checkout is recorded once: recording an id already recorded fails
//     with [ErrCheckoutExists] and changes nothing;
//   - a recorded checkout is read back whole by its id, from any process
//     sharing the store; an id never recorded is [ErrNotFound].
//
// Granting exactly once is the ledger's work: a checkout's credits are one
// grant whose idempotency key is [GrantKey] of the checkout, applied to the
// account recorded with it (credits.Ledger.GrantCredits).
package billing
