// Package httpapi serves the validmail HTTP API as an http.Handler that a
// host mounts at any prefix ([NewHandler]).
//
// Endpoints, with the API key permission each needs (header x-api-key):
//
//	GET    /validate?email=…             validate   1 credit, refunded for UNKNOWN
//	POST   /validate/async               batch      {"emails":[…]}, 1–1,000; 1 credit each
//	GET    /validate/status/{job_id}     batch      a job of the caller's account
//	GET    /api/v1/account               stats
//	POST   /api/v1/keys                  keys       {"name","permissions"}; a key grants only what it has
//	GET    /api/v1/keys                  keys
//	DELETE /api/v1/keys/{id}             keys
//	GET    /openapi.json                 none       the OpenAPI 3.1 document ([Handler.OpenAPI])
//
// Every response carries a request id (a UUID) in the X-Request-Id header
// and, for JSON bodies, as requestId. Errors are RFC 9457 problem
// documents (application/problem+json) with a [Code]; backend failures are
// 503 unavailable (timeouts, refused or reset connections, a closed
// validator) or 500 internal, and never disclose their cause, which goes
// to the log.
//
// A batch sent with an Idempotency-Key header is accepted once per account
// and key: a repeat with the same addresses (compared by the SHA-256 of
// their canonical JSON) answers the first job ids and charges nothing; a
// repeat with other addresses is 422 idempotency_key_reused. How long a
// key is remembered is the queue backend's business.
//
// Each API key has a token bucket ([RateLimit], default
// [DefaultRatePerSecond] per second with bursts of [DefaultRateBurst]);
// responses carry RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset
// and a refused request gets 429 with Retry-After. The default limiter
// counts per process; pass a shared one (redisstore.RateLimiter) to limit
// a deployment of several instances.
//
// With a [Config].Registerer the handler exports
// validmail_http_requests_total{route,code},
// validmail_http_request_duration_seconds{route},
// validmail_validations_total{status} and validmail_credits_charged_total.
package httpapi
