// Package redisstore keeps every validmail backend in Redis: accounts and
// keys ([store.Accounts]), the credits ledger ([credits.Store]), the job
// queue ([jobs.Driver], [jobs.ChargingDriver], [jobs.Notifier]) and the
// webhook outbox and endpoints ([webhook.Outbox], [webhook.Endpoints], on
// [Webhooks]), with a shared [RateLimiter]; [NewBackend] returns them all
// as one [store.Backend]. It runs on the host's go-redis client
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
// Every key is "{" + [Config.Prefix] + "}" followed by a name, so tenants
// and tests can share a server under different prefixes. The braces make
// the prefix a hash tag: all keys of one Store live in one cluster slot, so
// a script may touch any of them. Scripts receive the keys they know in
// advance through KEYS; the keys of individual jobs, accounts and API keys,
// found only while a script runs, are built from the same prefix.
//
//   - seq:job, seq:entry: counters behind job ids and ledger entry ids
//   - job:ID: a hash per job; completed jobs expire after
//     [Config.Retention]
//   - ready (by id), delayed (by run-at), leases (by lease expiry), done (by
//     completion time): sorted sets of job ids
//   - bal:ACCOUNT, hist:ACCOUNT, idem:ACCOUNT: the balance, the entries as
//     a list of JSON objects, and the entries by idempotency key
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
//
// API key secrets are never stored: only their SHA-256 hash and display
// prefix are.
//
// Idle workers are woken by a PUBLISH on the channel "{prefix}notify" that
// the enqueueing script sends; [Store.Subscribe] listens on it.
//
// # Where each promise is kept
//
//   - No overdraft, idempotent changes: the credit_check and credit_write
//     functions of the script library, used by [Store.Apply] and by every
//     script that charges or refunds.
//   - A charged batch is both or neither: [Store.EnqueueCharged] checks the
//     charge and the job keys, then writes both, in one script.
//   - Leases: [Store.Lease] hands out ids from the ready set with a random
//     token; [Store.Heartbeat], [Store.Retry] and [Store.Complete] compare
//     state and token in their script, so a rescued lease writes nothing.
//   - Completion, refund, batch counters and webhook events are one script
//     ([Store.Complete]); the completion that brings a batch's done counter
//     to its total writes the batch's event, so exactly one does. An event
//     id already in the outbox fails it whole.
//   - Crashed workers: [Store.RescueExpired] moves expired leases back to
//     the ready set and counts a failure.
//   - Shared rate limits: [RateLimiter], one GCRA script per decision on the
//     server's clock.
package redisstore
