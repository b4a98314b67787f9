// Package pgstore implements every backend interface of validmail on
// PostgreSQL (13 or later) with github.com/jackc/pgx/v5: [store.Accounts]
// and [credits.Store] on [Store], the job queue's driver
// ([jobsdriver.Driver], [jobsdriver.ChargingDriver], [jobsdriver.Notifier],
// …) over the same Store, and [webhook.Outbox] and [webhook.Endpoints] on
// [Webhooks]. [NewBackend] returns them all as one [backend.Backend], the
// driver as its Jobs: a host reaches the queue through jobs.NewQueue over
// it, never on the Store.
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
//     entry, and idempotency keys are a unique index. A page of history
//     ([Store.HistoryPage]) is a backward scan of the (account, id) index;
//     per-day totals ([Store.Totals]) are rows of credit_totals that a
//     statement trigger on the entries updates in the statement writing
//     them, whichever path wrote them.
//   - Accounts: an account and its signup grant are one transaction
//     ([Store.CreateAccount]). Keys are stored as their SHA-256 (bytea,
//     unique index) and display prefix; [Store.Authenticate] is a hash
//     lookup.
//   - Console: sessions are rows under the SHA-256 of their token with
//     their account, indexed by account, so [Sessions.DeleteAccountSessions]
//     is one DELETE and [Sessions.UpdateSession] an UPDATE that finds no
//     row once a session has ended; a mailed token is a row under its
//     SHA-256, used once by a DELETE ... RETURNING ([Store.TakeToken]); an
//     unconfirmed account holds its signup grant in a column that
//     [Store.ConfirmAccount] clears in the transaction writing the grant.
//   - Finish notices (migration 029): an account's choice is a column of
//     its row; a batch's notice a row of batch_notices keyed by the batch,
//     claimed by one UPDATE over the due rows taken FOR UPDATE SKIP LOCKED
//     ([Store.ClaimNotices]), settled by a compare-and-set on its claim's
//     token ([Store.DoneNotice], [Store.DelayNotice]).
//   - Jobs: ids come from a bigserial. A batch is one INSERT over unnest
//     (Enqueue); leasing is UPDATE ... WHERE id IN (SELECT ... FOR
//     UPDATE SKIP LOCKED) (Lease, RescueExpired); lease
//     tokens are random UUIDs; every state change compares state and token
//     (Heartbeat, Retry). Completing a job, counting it in
//     its batch's row, refunding it and inserting its webhook events as
//     pending deliveries is one statement, so one transaction
//     (Complete); the batch row's lock orders a batch's
//     completions, and the one that brings completed to total writes the
//     batch's event. An event id already in the outbox fails it whole.
//     CompleteMany sends a group of those statements in one round
//     trip and one implicit transaction, in id order. Charging and
//     enqueueing a batch is one transaction (EnqueueCharged); a
//     batch's idempotency key is stored with its job ids and content
//     fingerprint until it expires (Cleanup removes it).
//   - Webhooks: deliveries are leased like jobs (FOR UPDATE SKIP LOCKED,
//     random tokens, compare-and-set on the token: [Webhooks.Lease],
//     [Webhooks.MarkDelivered]), but every time in the outbox is the
//     caller's clock, never the database's.
//   - Retention: jobs and batches are partitioned by the UTC day their
//     ids carry, with a default partition for days that have none.
//     Cleanup drops a day's partition once everything in it
//     finished before the cutoff's day, so retention writes no dead rows;
//     a day still holding an active job keeps its partition and loses
//     only its finished rows. [Store.EnsurePartitions] makes the days
//     ahead at New and at every Cleanup. Making and dropping partitions
//     share one advisory lock per schema: one process at a time changes
//     them, and the others leave it to that one. Statements on jobs by
//     id carry their ids' days as constants, so that their plans, cached
//     per connection, touch those days' partitions alone; a lease looks
//     first from the day of the oldest unfinished job to today, and at
//     the whole table only for what that range lacks.
//   - Deletion: DeleteBatch removes a batch's jobs, its row, its
//     list and rows in one transaction, jobs first (the order completions
//     lock them in).
//   - Wake-up: a statement trigger on the jobs table sends NOTIFY, and
//     Subscribe LISTENs on a dedicated connection taken from the
//     pool, reconnecting when it fails.
//   - Rate limits: [RateLimiter], one call of a stored GCRA function per
//     decision, on a row per bucket locked for that decision only.
//   - Quotas: [RateLimiter.Take], one call of a stored function that
//     creates or locks the key's row, starts it again in a new window and
//     takes the units only if the window has them all;
//     [RateLimiter.Refund] is one UPDATE of that row, in the same window
//     only.
//   - List drafts ([jobsdriver.ListDraftDriver], the console's lists waiting
//     for confirmation): PutListDraft, one transaction under
//     advisory locks on the account and the network, which also removes
//     expired drafts and chunks; TakeListDraft, one DELETE …
//     RETURNING, so one of concurrent takes wins.
//
// Errors: the domain sentinels ([jobtype.ErrNotFound], [store.ErrInvalidKey],
// ...) as the interfaces promise; a cancelled context gives an error
// wrapping ctx.Err(); a lost or refused connection gives an error matching
// [store.ErrUnavailable]. A change whose commit was acknowledged is durable.
package pgstore
