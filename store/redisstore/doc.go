// Package redisstore keeps every validmail backend in Redis: accounts and
// keys ([store.Accounts]) and the credits ledger ([credits.Store]) on
// [Store], the job queue's driver ([jobsdriver.Driver],
// [jobsdriver.ChargingDriver], [jobsdriver.Notifier], …) over the same
// Store, and the webhook outbox and endpoints ([webhook.Outbox],
// [webhook.Endpoints], on [Webhooks]), with a shared [RateLimiter];
// [NewBackend] returns them all as one [backend.Backend], the driver as
// its Jobs (a host reaches the queue through jobs.NewQueue over it, never
// on the Store). It runs on the host's go-redis client
// ([redis.UniversalClient]) and never owns it.
//
// Every change that touches more than one key is one Lua script, run with
// EVALSHA (falling back to EVAL when the server does not know it yet). Each
// script makes all its checks — key types, balances, idempotency keys,
// lease tokens — before its first write, so a refused change writes nothing
// and a change is never half applied.
//
// # Keys
//
// Every key starts with a hash tag built from [Config.Prefix], so tenants
// and tests can share a server under different prefixes, and the keys of
// one store spread over 16 shards, each a cluster slot of its own: an
// account's keys (balance, ledger, totals, usage, jobs, batches,
// idempotency records, webhook endpoint and deliveries) are all in its
// shard, with the shard's queues and sequences, so every script touches
// one slot while the accounts, and the work, spread over a cluster's
// masters. Shard 0's tag is "{prefix}", which also holds what is global:
// accounts, API keys, the email and key-hash indexes, sessions and the
// marker. Rate-limit buckets and quotas go to the shard of their key's
// group ([ratelimit.Group]), named as if it were an account: an
// account's limits in its own shard, the others spread over the shards. Shard k's tag is "{prefix:sk.j}", j chosen
// so that the 16 shards fall in the 16 sixteenths of the slot space. The
// shard is read off the ids: a new account id is a version 8 UUID whose
// last byte is its shard, a job or batch id carries its shard from bit 40
// up, a webhook lease token starts with it. Version 4 account ids and
// small job ids (those of the layout where every key carried "{prefix}")
// are shard 0's, so that layout's data is read where it lies. Scripts
// receive the keys they know in advance through KEYS; the keys of
// individual jobs, found only while a script runs, are built from the
// shard's base. Workers lease from the shards round-robin, among those
// that hold work. The names below follow the tag.
//
//   - seq:job, seq:entry: a shard's counters behind job ids and ledger
//     entry ids (unique within the shard, so within an account)
//   - job:ID: a hash per job, its attempts in errors, last_error and
//     unjudged (the attempts in a row without a DNS verdict; a job the
//     releases before that field retried carries the count at the end of
//     last_error only, where a lease reads it); completed jobs expire
//     after [Config.Retention]
//   - rq:ACCOUNT (an account's ready jobs, by id; a job retried after a
//     failure or deferred, behind the jobs waiting then), delayed (by
//     run-at), leases (by lease expiry), done (by completion time): sorted
//     sets of job ids; ready: the ready jobs of the layout before the fair
//     order (by id), moved to their accounts' queues by the next leases
//   - accts: the accounts with ready jobs, by their next turn; turn: the
//     last turn leased (the fair order, see Lease)
//   - bal:ACCOUNT, hist:ACCOUNT, idem:ACCOUNT: the balance, the entries as
//     a list of JSON objects in id order, and the entries by idempotency key
//   - ctot:ACCOUNT: the account's per-day totals (sum and count of the
//     deltas per day and reason) and how many entries of hist they hold;
//     a history older than the totals is counted on its first read, a
//     thousand entries a script ([Store.Totals])
//   - idk:ACCOUNT:KEY: the batch an idempotency key names (first id, size,
//     fingerprint), expiring after the key's TTL
//   - bt:FIRST: a batch's record (account, source, total, and the counters
//     done and c:STATUS the completions keep), expiring with its last job;
//     batches:ACCOUNT: the account's batches by id
//   - wh:ev:ID: a hash per webhook delivery (event, state, lease,
//     attempts); job completions write it in their own script
//   - wh:due (pending deliveries by due time, or lease expiry while
//     leased), wh:acct:ACCOUNT (by creation), wh:finished (by finish
//     time): sorted sets of event ids
//   - wh:ep:ACCOUNT: an account's webhook endpoint
//   - acct:ID, emails, key:ID, keyhash, keys:ACCOUNT: accounts, the email
//     index, API keys, the index by SHA-256 hash, an account's key ids
//   - marker: a random value written once, when the store is initialised
//     ([Config.Init], [Store.Init]); missing at start, or gone or replaced
//     while the store runs, it means the server lost the store's data
//     ([store.ErrDataLost]). A prefix holding accounts but neither marker
//     nor layout stamp is a previous release's store, adopted at start
//     (the marker written, logged)
//   - layout: the key layout's version ([LayoutVersion]), raised by
//     [Store.Setup] or [Store.Migrate], never lowered; a store stamped
//     newer than the code is refused ([ErrLayoutTooNew])
//   - sess:ID: a console session under the SHA-256 of its token, expiring
//     with it; acctsess:ACCOUNT: the account's session ids, so that a
//     password change ends them ([Sessions])
//   - tok:HASH: a mailed single-use token under its SHA-256 (purpose,
//     account, expiry), expiring with it; an account's "held" field is the
//     signup grant its email's confirmation will write
//   - notice:BATCH: a batch's finish notice (account, claim token,
//     attempts, done), expiring store.NoticeKeep after it is done;
//     notices: the pending ones' batch ids by due time (a claim's lease's
//     end while claimed); an account's "finishmail" field is its choice
//     ([Store.ClaimNotices]: the due ids read, then each claimed by a
//     script that checks it is still due)
//   - team:ACCOUNT, members, inv:HASH, invs:ACCOUNT: an account's members,
//     the member email index, invitations and an account's invitation
//     hashes (team.go); audit:ACCOUNT in the account's shard: its audit log
//   - totp:LOGIN, totp-rc:LOGIN, totp-team: a login's second factor (its
//     last used step kept by a script, [Store.UseTOTPStep]), its unused
//     recovery codes' hashes, the accounts requiring one of their team
//   - slots:ACCOUNT in the account's shard: the jobs holding one of the
//     account's slots by expiry ([Store.AcquireSlot], one script)
//
// API key secrets, session tokens and mailed tokens are never stored:
// only their SHA-256 hash (and a key's display prefix) are.
//
// Idle workers are woken by a PUBLISH on the channel "{prefix}notify" that
// the enqueueing script sends; Subscribe listens on it.
//
// # Where each promise is kept
//
//   - No overdraft, idempotent changes: the credit_check and credit_write
//     functions of the script library, used by [Store.Apply] and by every
//     script that charges or refunds; credit_total adds each entry to the
//     per-day totals in the same script. A page of history
//     ([Store.HistoryPage]) is a binary search of the list by id, then one
//     LRANGE.
//   - A charged batch is both or neither: EnqueueCharged checks the
//     charge and the job keys, then writes both, in one script.
//   - Leases: Lease hands out ids from the accounts' queues in
//     turn (the accounts in line, lowest next turn first, a job each, in
//     one script per shard; shards share a lease in proportion) with a
//     random token; Heartbeat, Retry and Complete compare
//     state and token in their script, so a rescued lease writes nothing.
//   - Completion, refund, batch counters and webhook events are one script
//     (Complete); the completion that brings a batch's done counter
//     to its total writes the batch's event, so exactly one does. An event
//     id already in the outbox fails it whole.
//   - Crashed workers: RescueExpired moves expired leases back to
//     their places in their accounts' queues and counts a failure.
//   - Deletion: DeleteBatch removes the batch's record (so it
//     reads as gone at once) and a plain batch's jobs in one script; a
//     list is marked being removed and its jobs and rows dropped 2,000
//     keys a script, what a failure leaves finished by Cleanup.
//     Ids of removed jobs left in the queues' sets are skipped and
//     dropped by their readers.
//   - Shared rate limits: [RateLimiter], one GCRA script per decision on the
//     server's clock.
//   - Quotas: [RateLimiter.Take], one script over a key per quota and
//     window (by the server's clock) that expires when the window ends;
//     [RateLimiter.Refund], one script on that key, which does nothing once
//     it is gone.
//   - List drafts ([jobsdriver.ListDraftDriver]): in the store's own slot,
//     PutListDraft and TakeListDraft one script each;
//     every key expires with its draft.
package redisstore
