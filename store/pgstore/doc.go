// Package pgstore implements every backend interface of validmail on
// PostgreSQL (13 or later) with github.com/jackc/pgx/v5: [store.Accounts],
// [credits.Store], [jobs.Driver], [jobs.ChargingDriver] and [jobs.Notifier]
// on [Store], and [webhook.Outbox] and [webhook.Endpoints] on [Webhooks].
// [NewBackend] returns them all as one [store.Backend].
//
// A [Store] runs over the host's *pgxpool.Pool and never closes it. All its
// tables live in one schema ([Config.Schema], "public" by default), created
// and upgraded by embedded, versioned migrations that [New] applies (see
// [Store.Migrate]).
//
// How each promise is kept:
//   - Credits ([Store.Apply]): a balances table with CHECK (balance >= 0)
//     beside an append-only entries table; a charge is a conditional
//     UPDATE ... WHERE balance >= n in the transaction that appends its
//     entry, and idempotency keys are a unique index.
//   - Accounts: an account and its signup grant are one transaction
//     ([Store.CreateAccount]). Keys are stored as their SHA-256 (bytea,
//     unique index) and display prefix; [Store.Authenticate] is a hash
//     lookup.
//   - Jobs: ids come from a bigserial. A batch is one INSERT over unnest
//     ([Store.Enqueue]); leasing is UPDATE ... WHERE id IN (SELECT ... FOR
//     UPDATE SKIP LOCKED) ([Store.Lease], [Store.RescueExpired]); lease
//     tokens are random UUIDs; every state change compares state and token
//     ([Store.Heartbeat], [Store.Retry]). Completing a job, counting it in
//     its batch's row, refunding it and inserting its webhook events as
//     pending deliveries is one statement, so one transaction
//     ([Store.Complete]); the batch row's lock orders a batch's
//     completions, and the one that brings completed to total writes the
//     batch's event. An event id already in the outbox fails it whole.
//     [Store.CompleteMany] sends a group of those statements in one round
//     trip and one implicit transaction, in id order. Charging and
//     enqueueing a batch is one transaction ([Store.EnqueueCharged]); a
//     batch's idempotency key is stored with its job ids and content
//     fingerprint until it expires ([Store.Cleanup] removes it).
//   - Webhooks: deliveries are leased like jobs (FOR UPDATE SKIP LOCKED,
//     random tokens, compare-and-set on the token: [Webhooks.Lease],
//     [Webhooks.MarkDelivered]), but every time in the outbox is the
//     caller's clock, never the database's.
//   - Wake-up: a statement trigger on the jobs table sends NOTIFY, and
//     [Store.Subscribe] LISTENs on a dedicated connection taken from the
//     pool, reconnecting when it fails.
//   - Rate limits: [RateLimiter], one call of a stored GCRA function per
//     decision, on a row per bucket locked for that decision only.
//
// Errors: the domain sentinels ([jobs.ErrNotFound], [store.ErrInvalidKey],
// ...) as the interfaces promise; a cancelled context gives an error
// wrapping ctx.Err(); a lost or refused connection gives an error matching
// [ErrUnavailable]. A change whose commit was acknowledged is durable.
package pgstore
