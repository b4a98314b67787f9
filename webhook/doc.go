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
