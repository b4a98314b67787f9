package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/store/pgstore"
	"github.com/validmail/validmail/store/redisstore"
	"github.com/validmail/validmail/webhook"
)

// backend is the storage the service runs on: one store implementing every
// backend interface.
type backend struct {
	// kind is "memory", "postgres" or "redis".
	kind     string
	accounts store.Accounts
	credits  credits.Store
	driver   jobs.Driver
	// webhooks holds the accounts' endpoints and the outbox the worker
	// pool writes events to and the dispatcher delivers.
	webhooks webhookStore
	// limiter is the rate limiter shared by every instance on the
	// backend; nil means each instance limits on its own.
	limiter httpapi.RateLimiter
	close   func()
}

// Close releases the backend's connections.
func (b *backend) Close() {
	if b.close != nil {
		b.close()
	}
}

// shared reports whether several processes can serve one deployment over
// the backend.
func (b *backend) shared() bool { return b.kind != "memory" }

// webhookStore is what every store package's Webhooks method returns.
type webhookStore interface {
	webhook.Outbox
	webhook.Endpoints
}

// storeBackend is what every store package's Store provides.
type storeBackend interface {
	store.Accounts
	credits.Store
	jobs.Driver
}

var (
	_ storeBackend = (*memstore.Store)(nil)
	_ storeBackend = (*pgstore.Store)(nil)
	_ storeBackend = (*redisstore.Store)(nil)

	_ webhookStore = (*memstore.Webhooks)(nil)
	_ webhookStore = (*pgstore.Webhooks)(nil)
	_ webhookStore = (*redisstore.Webhooks)(nil)
)

// redactURL returns rawURL with any password hidden, for logs.
func redactURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// openBackend connects to the store named by storeURL: "memory",
// postgres://… or redis://…. It checks that the server answers.
//
// A PostgreSQL URL may carry schema=NAME, the schema that holds the tables
// (default public); every other parameter goes to pgx (pool_max_conns, …).
// A Redis URL may carry prefix=NAME, the key prefix (default validmail);
// every other parameter goes to go-redis. workers sizes the PostgreSQL
// connection pool when the URL does not.
func openBackend(ctx context.Context, storeURL string, workers int, logger *slog.Logger) (*backend, error) {
	if storeURL == "" || storeURL == "memory" || storeURL == "memory://" {
		s := memstore.New()
		return &backend{kind: "memory", accounts: s, credits: s, driver: s, webhooks: s.Webhooks()}, nil
	}
	u, err := url.Parse(storeURL)
	if err != nil {
		return nil, fmt.Errorf("%w: -store: not a URL", errUsage)
	}
	switch u.Scheme {
	case "postgres", "postgresql":
		return openPostgres(ctx, u, workers, logger)
	case "redis", "rediss":
		return openRedis(ctx, u)
	}
	return nil, fmt.Errorf("%w: -store: want memory, postgres://… or redis://…, not %q", errUsage, u.Scheme+"://…")
}

// takeParam removes the query parameter name from u and returns its value.
func takeParam(u *url.URL, name string) string {
	q := u.Query()
	v := q.Get(name)
	if q.Has(name) {
		q.Del(name)
		u.RawQuery = q.Encode()
	}
	return v
}

func openPostgres(ctx context.Context, u *url.URL, workers int, logger *slog.Logger) (*backend, error) {
	schema := takeParam(u, "schema")
	sizeSet := u.Query().Has("pool_max_conns")
	pcfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, fmt.Errorf("%w: -store: %v", errUsage, err)
	}
	if !sizeSet {
		// Each worker holds a connection while it completes a job, the
		// notification listener holds one, and requests need the rest.
		pcfg.MaxConns = max(pcfg.MaxConns, int32(workers)+8)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres %s: %w", redactURL(u.String()), err)
	}
	s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema, Logger: logger})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return &backend{kind: "postgres", accounts: s, credits: s, driver: s, webhooks: s.Webhooks(), close: pool.Close}, nil
}

func openRedis(ctx context.Context, u *url.URL) (*backend, error) {
	prefix := takeParam(u, "prefix")
	if strings.ContainsAny(prefix, "{}") {
		return nil, fmt.Errorf("%w: -store: the Redis prefix must not contain braces", errUsage)
	}
	opts, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("%w: -store: %v", errUsage, err)
	}
	client := redis.NewClient(opts)
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		return nil, fmt.Errorf("redis %s: %w", redactURL(u.String()), err)
	}
	s, err := redisstore.New(client, &redisstore.Config{Prefix: prefix})
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("redis: %w", err)
	}
	return &backend{
		kind: "redis", accounts: s, credits: s, driver: s, webhooks: s.Webhooks(),
		// The limiter's keys sit beside the store's, under its hash tag.
		limiter: redisstore.NewRateLimiter(client, "{"+cmp.Or(prefix, redisstore.DefaultPrefix)+"}"),
		close:   func() { client.Close() },
	}, nil
}

// errNotShared reports a command that needs a store other processes can
// reach.
var errNotShared = errors.New("this needs a shared store (-store postgres://… or redis://…): a memory store ends with the process")
