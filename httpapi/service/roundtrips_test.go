package service_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/pgstore"
	"github.com/validmail/validmail/store/ratelimit"
	"github.com/validmail/validmail/store/redisstore"
)

// pgCounter counts the statements and batches a pool sends: one round
// trip each once statements are prepared.
type pgCounter struct{ n atomic.Int64 }

func (c *pgCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *pgCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *pgCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *pgCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *pgCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// redisCounter counts the commands and pipelines a client sends.
type redisCounter struct{ n atomic.Int64 }

func (c *redisCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *redisCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c *redisCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// TestValidateRoundTrips counts the backend round trips of GET /validate
// through the service on PostgreSQL and Redis, with the default rate
// limits and a key used within the key cache's TTL: one for both rate
// limits, one for the charge. The key lookup (once per KeyCacheTTL, a
// second by default) and the usage counts (written by the flush, once per
// account, month and status per interval) happen outside the requests
// counted: the test sets long intervals for both so that a slow run does
// not count them.
func TestValidateRoundTrips(t *testing.T) {
	type target struct {
		name string
		open func(t *testing.T) (*backend.Backend, func() int64)
	}
	var targets []target
	if u := os.Getenv("VALIDMAIL_TEST_POSTGRES"); u != "" {
		targets = append(targets, target{name: "postgres", open: func(t *testing.T) (*backend.Backend, func() int64) {
			ns := "rt_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
			t.Cleanup(func() { dropSchema(t, u, ns) })
			cfg, err := pgxpool.ParseConfig(u)
			if err != nil {
				t.Fatal(err)
			}
			c := &pgCounter{}
			cfg.ConnConfig.Tracer = c
			pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			b, err := pgstore.NewBackend(context.Background(), pool, &pgstore.Config{Schema: ns})
			if err != nil {
				t.Fatal(err)
			}
			return b, c.n.Load
		}})
	}
	if u := os.Getenv("VALIDMAIL_TEST_REDIS"); u != "" {
		targets = append(targets, target{name: "redis", open: func(t *testing.T) (*backend.Backend, func() int64) {
			opt, err := redis.ParseURL(u)
			if err != nil {
				t.Fatal(err)
			}
			client := redis.NewClient(opt)
			t.Cleanup(func() { client.Close() })
			c := &redisCounter{}
			client.AddHook(c)
			b, err := redisstore.NewBackend(client, &redisstore.Config{Prefix: "rt-" + uuid.NewString(), Init: true})
			if err != nil {
				t.Fatal(err)
			}
			return b, c.n.Load
		}})
	}
	if len(targets) == 0 {
		t.Skip("neither VALIDMAIL_TEST_POSTGRES nor VALIDMAIL_TEST_REDIS is set")
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			ctx := context.Background()
			b, count := tg.open(t)
			svc, err := service.New(b, &service.Config{
				Validator: instant{}, Workers: -1, UsageFlushInterval: time.Hour,
				API: httpapi.Config{RateLimit: ratelimit.Limit{PerSecond: 1000, Burst: 1000}, KeyCacheTTL: time.Hour},
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { svc.Close() })
			_, key, err := service.Bootstrap(ctx, b.Accounts, service.BootstrapParams{Email: "rt@example.org", Credits: 1000})
			if err != nil {
				t.Fatal(err)
			}
			get := func() {
				req := httptest.NewRequest("GET", "/validate?email=jane@example.org", nil)
				req.Header.Set("x-api-key", key)
				rec := httptest.NewRecorder()
				apiMux(t, svc).ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					t.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
			// Prepared statements, loaded scripts and the key cache
			// warm up first.
			for range 5 {
				get()
			}
			const n = 100
			start := count()
			for range n {
				get()
			}
			trips := count() - start
			t.Logf("%s: %d round trips for %d GET /validate: %.2f each", tg.name, trips, n, float64(trips)/n)
			if trips > 2*n+3 {
				t.Fatalf("%.2f round trips per request; want at most 2", float64(trips)/n)
			}
		})
	}
}
