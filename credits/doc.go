// Package credits keeps per-account credit balances as an append-only ledger.
//
// A [Ledger] is the concrete type callers use; it runs over a [Store], the
// small interface a backend implements (see store/memstore, store/pgstore and
// store/redisstore). Every change is an [Entry] in the account's history, and
// the balance always equals the sum of the history's deltas.
//
// The rules every Store keeps, checked by the conformance suite in
// credits/creditstest:
//
//   - No balance ever goes below zero: a charge of N is all or nothing, and a
//     charge larger than the balance fails with an [*InsufficientError]
//     (matching [ErrInsufficient]) and changes nothing.
//   - A change carrying an idempotency key is applied at most once per
//     account: repeating the key with the same delta and reason returns the
//     original entry; repeating it with a different delta or reason fails
//     with [ErrIdempotencyConflict].
//   - An account that has never had an entry has a balance of zero.
//
// Reads are bounded by what they return, not by the history's length:
// [Ledger.HistoryPage] reads one page, newest first, after a cursor (the
// last entry id of the previous page), and [Ledger.Totals] reads per-day
// totals by reason that a [TotalsStore] keeps in the same atomic step as
// each entry. Stores offering neither ([PageStore], [TotalsStore]) are
// paged and totalled from their whole history.
//
// Writes of one account share commits when the store is a [GroupStore]:
// the Ledger sends an account's change at once when none of its changes
// is being written, and otherwise holds it until the one being written is
// done, then sends every change held meanwhile as one group (up to 256),
// judged one by one in arrival order. A lone change waits for nothing;
// the busier an account, the larger its groups, so that a client charging
// one account from many connections is not held to one durable commit per
// charge on its balance. A change held whose context ends before its
// group is sent is withdrawn; a group sent is written until the store
// answers or every one of its changes' contexts has ended, so that one
// caller giving up cancels nobody else's change and a store that hangs
// holds no caller past the group's latest deadline.
package credits
