// Package webhook pushes every completed validation job to the account's
// endpoint, signed per the Standard Webhooks specification, durably and
// safely.
//
// # Signing and verifying
//
// Each request carries webhook-id, webhook-timestamp and
// webhook-signature, the last being "v1," followed by the base64
// HMAC-SHA256 of "id.timestamp.body" under the secret's key. Secrets look
// like "whsec_" plus base64 ([NewSecret]); while one rotates, a [Signer]
// sends one signature per secret, space-separated. Go services receiving
// our events call [Verify] (or [VerifyOptions.Verify]) on the raw body.
//
// # Delivery
//
// This package alone makes the bytes of every event: [NewEvent] for
// validation.completed, [BatchCompletedPayload] for batch.completed (its
// counts are known only to the completion that finishes the batch, so a
// backend stores them as the event's typed [Event.Batch] and makes the
// bytes when it reads the event back, [Event.Expand]), [NewTestEvent] for
// webhook.test. An [Event] is one type from the completion that writes it
// to the delivery that sends it.
//
// Events are written to an [Outbox] in the same step that completes their
// job (webhook/jobevents builds them for the worker pool, for accounts
// with an enabled endpoint, and wakes the Dispatcher once they are
// written); the backends in store/ implement the Outbox together with
// [Endpoints], and webhook/webhooktest defines their contract. A
// [Dispatcher] leases due events and posts them, a bounded number at a
// time per endpoint; deliveries to a busy endpoint queue for a slot,
// so one receiver takes a burst of a thousand events in about a second
// rather than a trickle. 2xx is success; 410 disables the endpoint; anything
// else is retried after 5 s, 5 min, 30 min, 2 h, 5 h and 10 h (±10 %
// jitter, never sooner than a Retry-After of up to Config.MaxRetryAfter),
// after which the event is dead and stays visible in the delivery log. Every attempt carries the same
// webhook-id, so receivers can discard duplicates: delivery is at least
// once.
//
// # The outbox and the job queue
//
// The [Outbox] is a queue of its own beside the job queue (package
// jobs), not a kind of job on it. The two share one lease discipline,
// and so the names [Lease], [ErrLeaseLost] and [State] (a token per
// lease, every change a compare-and-set on it, a lease that expires
// handed out again), but little else:
//
//   - Fairness: jobs are handed out in turns per account, and a slow
//     domain steps aside; deliveries are handed out by due time and
//     limited per endpoint (a bounded number in flight, the rest queued
//     for a slot). On one queue an account's list of a million addresses
//     would hold back its own webhook deliveries, or a slow receiver the
//     account's validations.
//   - Time: a job's retries come seconds apart and it always ends with a
//     result; a delivery is retried for about 17 hours on its own schedule,
//     honours Retry-After, may end dead, and keeps every attempt in a log
//     the customer reads. The outbox takes every time from its caller, so
//     a dispatcher (and its tests) decide what now is.
//   - Storage: jobs carry an address, a charge and a result, and live in
//     day partitions (PostgreSQL) or per-shard ready queues (Redis) tuned
//     for tens of thousands a second; deliveries are one table or one
//     index per shard, pruned apart.
//
// What the two would share is small (the lease columns and the crash
// tests, already one harness, store/crashtest), and a job kind for
// deliveries would add a column and a branch to every hot path of the
// queue on three backends. So they stay two queues; the event is still
// written in the same atomic step as the job it reports on.
//
// # Safety
//
// Endpoints are chosen by customers, so requests go through [NewClient]:
// it checks the address at dial time, after resolution (so DNS rebinding
// gains nothing), and refuses loopback, private, link-local, CGNAT,
// multicast, documentation and other special-purpose ranges, including
// the IPv6 forms carrying such an IPv4 address (IPv4-mapped and
// -compatible, NAT64, 6to4, Teredo), by the rule the validator's MX check
// and SMTP prober share ([IsPublicAddr]); it ignores proxy environment
// variables, follows no redirects, speaks only http and https, and times
// out after 15 s. [ClientOptions.Allow] lets tests and private
// deployments reach named ranges or hosts.
package webhook
