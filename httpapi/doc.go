// Package httpapi serves the validmail HTTP API as an http.Handler that a
// host mounts at any prefix ([NewHandler]).
//
// Endpoints, with the API key permission each needs (header x-api-key):
//
//	GET    /validate?email=…             validate   1 credit, refunded for UNKNOWN
//	POST   /validate/async               batch      {"emails":[…]}, 1–1,000; 1 credit each
//	GET    /validate/status/{job_id}     batch      a job of the caller's account
//	GET    /api/v1/account               stats
//	GET    /api/v1/credits/history       stats      the ledger, newest first; ?limit=1–100 (default 20), ?cursor=
//	POST   /api/v1/keys                  keys       {"name","permissions"}; a key grants only what it has
//	GET    /api/v1/keys                  keys
//	DELETE /api/v1/keys/{id}             keys
//	GET    /api/v1/webhook               webhooks   the endpoint: url, enabled, times; never the secret
//	PUT    /api/v1/webhook               webhooks   {"url","enabled","rotate_secret"}; 201 on creation
//	DELETE /api/v1/webhook               webhooks
//	POST   /api/v1/webhook/test          webhooks   one signed webhook.test message; answers the attempt
//	GET    /api/v1/webhook/deliveries    webhooks   ?limit=1–500 (default 50); newest first
//	GET    /api/v1/batches               batch      the account's batches (lists too), newest first; ?limit=, ?cursor=
//	GET    /api/v1/batches/{batch_id}    batch      one batch: its state and counts
//	DELETE /api/v1/batches/{batch_id}    batch      204: the batch, its jobs, results and list rows erased
//	GET    /api/v1/batches/{batch_id}/results  batch  ?limit=, ?cursor=, ?status=, ?group=; ?format=csv|xlsx|jsonl, ?dedupe=true, ?rows=junk
//	POST   /api/v1/lists                 batch      a CSV, text or .xlsx file, submitted as one batch
//	GET    /openapi.json                 none       the OpenAPI 3.1 document ([Handler.OpenAPI])
//
// With a [Config].Seller, the credit packs on sale and their checkouts:
//
//	GET    /api/v1/billing/packs                   stats   the packs on sale
//	POST   /api/v1/billing/checkout                stats   opens a checkout for one pack
//	GET    /api/v1/billing/receipts/{session_id}   stats   a paid checkout's receipt
//	POST   /billing/stripe/webhook                 none    the payment provider's signed events
//
// The document is one generators take with their defaults: its servers
// entry is the origin and mount prefix it was served from (the scheme of
// the connection, or X-Forwarded-Proto from a proxy ending TLS), every
// operation has a tag and an operationId whose generated
// <operationId>Response type names no schema, and each export format has
// its media type (text/csv, application/x-ndjson). The tests check every
// response they receive against it.
//
// Every route but /openapi.json (and the operator's, which take the admin
// token) needs a key of an account whose email is confirmed: a key of an
// unconfirmed account, one made before the confirmation rules closed the
// console to such accounts, is refused on every route with 403
// email_unconfirmed, and the confirmation revokes it (see Handler.authedAs;
// the console's route table is in package dashboard).
//
// Every response carries a request id (a UUID) in the X-Request-Id header
// and, for JSON bodies, as requestId: the request's own X-Request-Id when
// it is a UUID, so that a trace can be followed from a gateway or a client
// into the logs, else a new one. Errors are RFC 9457 problem
// documents (application/problem+json) with a [Code]; backend failures are
// 503 unavailable (timeouts, refused or reset connections, a closed
// validator) or 500 internal, and never disclose their cause, which goes
// to the log.
//
// Bodies where credits move (a batch, an operator's grant) and a new key's
// are strict: an unknown field, a repeated key or trailing data is 400.
// A key repeated in another case ("credits", "Credits") is a repeated key,
// as encoding/json matches field names regardless of case. Every JSON body
// (the webhook's too) refuses repeated keys and trailing data.
//
// A batch sent with an Idempotency-Key header is accepted once per account
// and key: a repeat with the same addresses (compared by the SHA-256 of
// their canonical JSON) answers the first job ids and charges nothing; a
// repeat with other addresses is 422 idempotency_key_reused. A key is
// remembered for the queue's IdempotencyTTL (24 hours by default); after
// that it may start a new batch. A list (POST /api/v1/lists) sent with an
// Idempotency-Key is likewise accepted once per account and key: a repeat
// of the same file (compared by the SHA-256 of the file as read, its name,
// address column and text mode, so that a multipart body's new boundary
// changes nothing) answers the first list and charges nothing; another
// file is 422. The key is kept in the store beside the list's commit, so
// instances sharing a store and concurrent uploads make one batch; the
// batch and list keys are apart.
//
// Each API key has a token bucket ([ratelimit.Limit], default
// [DefaultRatePerSecond] per second with bursts of [DefaultRateBurst]);
// responses carry RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset
// and a refused request gets 429 with Retry-After. Failed authentications
// are limited per client (an IPv4 address, an IPv6 /64), and
// webhook test events per account. The default limiter counts per
// process; pass a shared one (the Limiter of a store/backend.Backend) to limit a
// deployment of several instances.
//
// The webhook routes exist only when [Config].Webhooks is set (with
// WebhookOutbox and WebhookSender); otherwise they answer 404 not_found
// like any unknown path. The signing secret is generated by the server
// (never chosen by the caller) and shown once: in the 201 that creates
// the endpoint, and in the answer to a PUT with "rotate_secret": true,
// after which the replaced secret keeps signing for
// [webhook.RotationGrace]. A PUT accepts any URL that
// [webhook.ValidateURL] accepts, private addresses included: addresses
// are checked when a message is sent, on the address actually dialled,
// by the sender's client, so that DNS cannot be used to slip past the
// check and a deployment's allowlist applies; the test ping shows such a
// refusal as its error. After each PUT and DELETE the handler calls
// [Config].EndpointChanged, so completions see the change at once.
//
// The operator's routes exist only when [Config].AdminToken is set, and
// take that token as "Authorization: Bearer TOKEN" (never an API key):
//
//	GET    /api/v1/admin/accounts/{email}          an account, its balance, credits by source
//	POST   /api/v1/admin/accounts/{email}/grants   {"credits","reason"}; Idempotency-Key applies once
//	PUT    /api/v1/admin/accounts/{email}/plan     the account's plan, when the accounts store can set it
//
// The token is compared in constant time, through its SHA-256, so neither
// its bytes nor its length leak; failures count against the client
// address like bad API keys. A grant is one ledger entry with reason
// "grant" and the given reason as its reference
// ([credits.Ledger.GrantCredits]).
//
// With a [Config].Registerer the handler exports
// validmail_http_requests_total{route,code},
// validmail_http_request_duration_seconds{route},
// validmail_validations_total{status} and validmail_credits_charged_total.
// The webhook dispatcher runs outside the handler; package
// webhook/webhookmetrics gives it an observer that exports its deliveries, attempts, latencies
// and the outbox depth on the same registry.
package httpapi
