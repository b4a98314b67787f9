package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/validmail/validmail/jobs/lists"
	"github.com/validmail/validmail/plans"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/ratelimit"
	"github.com/validmail/validmail/webhook"
)

// Defaults applied by [NewHandler] to the zero fields of [Config].
const (
	// DefaultMaxBodyBytes bounds a request body: 1 MiB, room for a batch
	// of 1,000 addresses of the longest legal length.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultRatePerSecond is the steady request rate allowed per API key.
	DefaultRatePerSecond = 50
	// DefaultRateBurst is how many requests one API key may make at once.
	DefaultRateBurst = 100
	// MaxBatch is the largest batch POST /validate/async accepts.
	MaxBatch = 1000
	// DefaultAccountRatePerSecond and DefaultAccountRateBurst bound the
	// requests of all the keys of one account together: more keys are no
	// way around the per-key limit.
	DefaultAccountRatePerSecond = 200
	DefaultAccountRateBurst     = 400
	// DefaultAuthFailureRatePerSecond and DefaultAuthFailureBurst bound
	// the requests with a missing, unknown or revoked key from one client
	// address; beyond them the address gets 429 without a key lookup.
	DefaultAuthFailureRatePerSecond = 5
	DefaultAuthFailureBurst         = 20
	// DefaultWebhookTestRatePerSecond and DefaultWebhookTestBurst bound
	// the test events ("webhook.test") one account may send, through the
	// API and the console together: 5 at once, then one every 6 s.
	DefaultWebhookTestRatePerSecond = 1.0 / 6
	DefaultWebhookTestBurst         = 5
	// DefaultMaxKeysPerAccount bounds the active API keys of an account.
	DefaultMaxKeysPerAccount = 100
)

// DefaultWebhookTestLimit is the default [Config.WebhookTestLimit].
var DefaultWebhookTestLimit = ratelimit.Limit{PerSecond: DefaultWebhookTestRatePerSecond, Burst: DefaultWebhookTestBurst}

// ErrConfig reports an invalid configuration of the serving side: the
// errors of [NewHandler], of httpapi/dashboard's New and of
// httpapi/service's New wrap it (the last also wraps the validator's
// emailcheck.ErrConfig when that is the cause).
var ErrConfig = errors.New("httpapi: invalid configuration")

// Config configures a [Handler] beyond the values [NewHandler] requires.
// Every field has a documented default: a nil *Config is the zero Config.
type Config struct {
	// Usage, when set, counts GET /validate results by account, month and
	// status, and GET /api/v1/account reports the month's counts.
	Usage store.Usage
	// Audit, when set, records in the account's audit log the keys
	// created and revoked and the webhook changes made through the API,
	// each by "key PREFIX" (the calling key's prefix). The backend's Audit
	// (store/backend) is one.
	Audit store.AuditLog

	// Logger receives one access record per request (request id, account,
	// route, status, duration; never the API key) at debug level, at error
	// for 5xx, and the causes of 500 and 503 responses. Default: no
	// logging.
	Logger *slog.Logger
	// Registerer receives the handler's Prometheus metrics. Default: none
	// are collected.
	Registerer prometheus.Registerer

	// RateLimiter decides whether a request of an API key may proceed.
	// Default: an in-memory token bucket per key ([ratelimit.Memory]),
	// which limits each instance separately; share a limiter (such as
	// redisstore.RateLimiter) to limit several instances together.
	RateLimiter ratelimit.Limiter
	// RateLimit is the limit applied to every API key. The zero value
	// means [DefaultRatePerSecond] and [DefaultRateBurst]; a negative
	// PerSecond turns rate limiting off; a zero PerSecond with a positive
	// Burst (a bucket that never refills) is an error.
	RateLimit ratelimit.Limit
	// ReadRateLimit is the per-key limit of the reads a client polls (job
	// status, batches and their results), counted apart from RateLimit so
	// that polling never refuses a validation. The zero value means ten
	// times RateLimit.
	ReadRateLimit ratelimit.Limit
	// AccountRateLimit is the limit applied to all the keys of one account
	// together, on top of RateLimit. The zero value means
	// [DefaultAccountRatePerSecond] and [DefaultAccountRateBurst], unless
	// RateLimit turns limiting off, which turns this off too; a negative
	// PerSecond turns it off.
	AccountRateLimit ratelimit.Limit
	// AuthFailureLimit bounds the failed authentications from one client
	// address ([Config.ClientIP]); beyond it the address is answered 429
	// without a key lookup until its bucket refills. The zero value means
	// [DefaultAuthFailureRatePerSecond] and [DefaultAuthFailureBurst];
	// a negative PerSecond turns it off.
	AuthFailureLimit ratelimit.Limit
	// WebhookTestLimit bounds the test events of one account (POST
	// /api/v1/webhook/test), in a bucket per account, which
	// the console's "Send test event" shares. The zero value means
	// [DefaultWebhookTestLimit]; a negative PerSecond turns it off.
	WebhookTestLimit ratelimit.Limit
	// ClientIP returns the address a request comes from, for
	// AuthFailureLimit, which counts an IPv4 address alone and an IPv6
	// address with the rest of its /64 ([ratelimit.SubscriberKey]).
	// Default: the host of r.RemoteAddr, the peer's address. Behind a
	// reverse proxy every request would come from the proxy: set ClientIP
	// to read the header your proxy sets (and only that proxy can set),
	// such as the last X-Forwarded-For value.
	ClientIP func(r *http.Request) string
	// KeyCacheTTL is how long an authenticated API key is trusted without
	// asking Accounts again, per instance: a revocation through this
	// handler takes effect at once, one made elsewhere (another instance,
	// the console) within KeyCacheTTL, and a key's LastUsedAt is written
	// at most once per KeyCacheTTL. Zero means [DefaultKeyCacheTTL];
	// negative asks Accounts on every request.
	KeyCacheTTL time.Duration
	// MaxKeysPerAccount bounds the active (unrevoked) API keys of one
	// account: POST /api/v1/keys beyond it is 409 key_limit_reached.
	// Default [DefaultMaxKeysPerAccount]; negative means no bound.
	MaxKeysPerAccount int
	// MaxBodyBytes bounds request bodies; larger ones are refused with 413.
	// Default [DefaultMaxBodyBytes].
	MaxBodyBytes int64

	// Workbooks bounds the .xlsx exports being made at once, per account
	// and per process; give the console the same gate. nil: a gate of
	// this handler's own, within the [WorkbookLimits] defaults, counting
	// each account's in this process.
	Workbooks *WorkbookGate

	// Lists bounds and directs POST /api/v1/lists (its Column and Text
	// come from each request). nil means the [lists.Options] defaults: up
	// to 1,000,000 rows and 256 MiB.
	Lists *lists.Options
	// MaxListUploads bounds the lists read at once by this handler, at
	// most [MaxListUploadsPerAccount] of them one account's and
	// MaxListUploadsPerNetwork one client network's; more of an account
	// or a network are refused with 429. When every slot is taken, a new
	// upload takes the slot of the slowest upload averaging less than
	// ListHealthyRate (it ends with 429 rate_limited, nothing submitted
	// nor charged), and is refused with 429 only when none is that slow.
	// Default [DefaultMaxListUploads]. The uploads in progress take at
	// most MaxListUploads × Lists.MaxBytes of the temporary directory's
	// disk (16 × 256 MiB = 4 GiB by default).
	MaxListUploads int
	// MaxListUploadsPerNetwork bounds the list uploads of one client
	// network (an IPv4 /24, an IPv6 /64, of [Config.ClientIP]), every
	// account's together. Default [DefaultMaxListUploadsPerNetwork];
	// negative means no bound.
	MaxListUploadsPerNetwork int
	// ListReadWindow and ListReadMinBytes pace a list's upload: the
	// server's read timeout does not end it while it sends at least
	// ListReadMinBytes per ListReadWindow, and one that sends less is
	// answered 408 (request_timeout). Defaults 5 s and 1 MiB (about
	// 205 KiB/s).
	ListReadWindow   time.Duration
	ListReadMinBytes int64
	// ListMaxDuration bounds a list upload's whole body, however fast it
	// keeps coming: one still sending then is answered 408. Default
	// 30 minutes (a list of 256 MiB at the least pace takes 21).
	ListMaxDuration time.Duration
	// ListHealthyRate is the average rate, in bytes a second since the
	// upload took its slot, at or above which an upload never loses its
	// slot to a new one. Default [DefaultListHealthyRate] (1 MiB/s).
	ListHealthyRate int64
	// ListEvictAfter is how long an upload keeps its slot before its
	// rate is judged. Default ListReadWindow.
	ListEvictAfter time.Duration
	// Now is the clock used for latencies and durations. Default time.Now.
	Now func() time.Time

	// AdminToken, when set, serves the operator's routes,
	// GET /api/v1/admin/accounts/{email} and
	// POST /api/v1/admin/accounts/{email}/grants, to requests carrying
	// "Authorization: Bearer " and this token; it must be at least
	// [MinAdminTokenBytes] long. Left empty, those routes answer 404
	// not_found, as any unknown path does. API keys never open them.
	AdminToken string

	// Webhooks stores each account's webhook endpoint. Setting it serves
	// the /api/v1/webhook routes (permission webhooks) and requires
	// WebhookOutbox and WebhookSender; left nil, those routes answer 404
	// not_found, as any unknown path does.
	Webhooks webhook.Endpoints
	// WebhookOutbox is read by GET /api/v1/webhook/deliveries.
	WebhookOutbox webhook.Outbox
	// WebhookSender makes the signed attempt of POST /api/v1/webhook/test.
	// A [*webhook.Dispatcher] satisfies it, and sends with its SSRF-safe
	// client, timeout and user agent.
	WebhookSender WebhookSender
	// EndpointChanged, when set, is told after each change of an
	// account's endpoint, so that jobs completed afterwards see the change
	// at once: a [*jobevents.Builder]'s Forget, as dashboard.Config's
	// field of the same name. Default: none; a cache in the worker pool
	// then notices within its TTL.
	//
	// [*jobevents.Builder]: https://pkg.go.dev/github.com/validmail/validmail/webhook/jobevents#Builder
	EndpointChanged func(accountID string)

	// Plans, when set, gives each account its plan's rate limit
	// (plans.Plan.RatePerSecond and Burst) in place of AccountRateLimit,
	// which stays the limit of plans that leave the rate at zero. The
	// plan is read with the key, so a change shows within KeyCacheTTL on
	// every instance.
	Plans *plans.Catalog
	// Seller, when set, sells credit packs: GET /api/v1/billing/packs,
	// POST /api/v1/billing/checkout, GET /api/v1/billing/receipts/{id}
	// (permission stats) and the payment provider's events at POST
	// /billing/stripe/webhook. Nil: those routes are 404.
	Seller Seller
	// CheckoutSuccessURL and CheckoutCancelURL are where the payment page
	// sends a buyer of a checkout opened through the API, after paying
	// ({CHECKOUT_SESSION_ID} becomes the checkout's id) or not; both are
	// required with Seller.
	CheckoutSuccessURL, CheckoutCancelURL string
}

// WebhookSender sends one signed message to an endpoint, outside the
// outbox, and reports the attempt. It may be called concurrently.
type WebhookSender interface {
	Send(ctx context.Context, ep webhook.Endpoint, ev webhook.Event) webhook.Attempt
}
