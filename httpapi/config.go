package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store"
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
)

// ErrConfig reports an invalid [Config]; the error returned by
// [NewHandler] wraps it.
var ErrConfig = errors.New("httpapi: invalid config")

// Validator validates one address. [*emailcheck.Validator] satisfies it.
// It may be called concurrently.
type Validator interface {
	Validate(ctx context.Context, email string, opts ...emailcheck.CallOption) (emailcheck.Result, error)
}

// Config configures a [Handler]. Validator, Ledger, Queue and Accounts are
// required; every other field has a documented default.
type Config struct {
	// Validator validates the addresses of GET /validate.
	Validator Validator
	// Ledger charges and refunds credits.
	Ledger *credits.Ledger
	// Queue accepts batches and answers job status.
	Queue *jobs.Queue
	// Accounts authenticates API keys and stores accounts and keys.
	Accounts store.Accounts

	// Logger receives one access record per request (request id, account,
	// route, status, duration; never the API key) and the causes of 500
	// and 503 responses. Default: no logging.
	Logger *slog.Logger
	// Registerer receives the handler's Prometheus metrics. Default: none
	// are collected.
	Registerer prometheus.Registerer

	// RateLimiter decides whether a request of an API key may proceed.
	// Default: an in-memory token bucket per key ([NewMemoryRateLimiter]),
	// which limits each instance separately; share a limiter (such as
	// redisstore.RateLimiter) to limit several instances together.
	RateLimiter RateLimiter
	// RateLimit is the limit applied to every API key. The zero value
	// means [DefaultRatePerSecond] and [DefaultRateBurst]; a negative
	// PerSecond turns rate limiting off.
	RateLimit RateLimit
	// MaxBodyBytes bounds request bodies; larger ones are refused with 413.
	// Default [DefaultMaxBodyBytes].
	MaxBodyBytes int64
	// Now is the clock used for latencies and durations. Default time.Now.
	Now func() time.Time
}
