// Package storeurl opens a [backend.Backend] named by a URL, the way a
// service binary takes its storage from a flag or an environment
// variable:
//
//	memory                                    process memory (store/memstore)
//	postgres://user@host:5432/db?schema=NAME  PostgreSQL (store/pgstore)
//	redis://host:6379/0?prefix=NAME           Redis (store/redisstore)
//	redis+cluster://host1:6379,host2:6379/?prefix=NAME
//	                                          Redis Cluster (store/redisstore)
//
// It imports all three backends, and so the PostgreSQL and Redis client
// libraries; a host that wants one backend only calls that package's
// NewBackend with a pool or client of its own instead.
package storeurl

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/store/pgstore"
	"github.com/validmail/validmail/store/redisstore"
)

// ErrBadURL reports a URL that names no backend or carries an invalid
// parameter; the error [Open] returns wraps it.
var ErrBadURL = errors.New("storeurl: invalid store URL")

// Options tunes [Open]. The zero value gives the defaults.
type Options struct {
	// Workers is how many job workers will run over the backend. A
	// PostgreSQL pool gets Workers+8 connections when the URL sets no
	// pool_max_conns: a worker holds one while it completes a job, the
	// notification listener holds one, and requests need the rest.
	Workers int
	// Logger receives the backend's records. Default: discard.
	Logger *slog.Logger
	// Init declares a Redis store new: its marker key is written when
	// missing ([redisstore.Config.Init]). Set it for the first start of a
	// deployment only. Without it, Open refuses a Redis store whose
	// marker is missing with an error wrapping
	// [github.com/validmail/validmail/store.ErrDataLost]: the
	// server lost its data, or the store was never initialised. Other
	// backends ignore it. A Redis prefix holding a previous release's
	// data without a marker is adopted without it.
	Init bool
	// SkipMigrate opens the store without migrating it: a PostgreSQL
	// schema or Redis layout that is not at this release's version fails
	// the Open ([pgstore.ErrSchemaOutdated],
	// [redisstore.ErrLayoutOutdated]), for deployments that migrate in a
	// step of their own (validmaild migrate). Without it, Open applies
	// the pending migrations, logging each. A store a newer release
	// migrated is refused either way ([pgstore.ErrSchemaTooNew],
	// [redisstore.ErrLayoutTooNew]).
	SkipMigrate bool
}

// Open connects to the backend named by rawURL and checks that its server
// answers: "memory" (or ""), postgres://… or redis://….
//
// A PostgreSQL URL may carry schema=NAME, the schema that holds the tables
// (default public); every other parameter goes to pgx (pool_max_conns, …).
// A Redis URL may carry prefix=NAME, the key prefix (default validmail);
// every other parameter goes to go-redis. A Redis Cluster URL,
// redis+cluster:// (rediss+cluster:// for TLS), lists one or more nodes
// separated by commas, host:port each, and takes no database number; its
// parameters are those of go-redis's cluster URLs (max_redirects,
// dial_timeout, pool_size, …; see redis.ParseClusterURL) besides prefix.
// The cluster client follows failovers quickly: see
// [redisstore.FollowFailover]. A Redis store must have been initialised
// once ([Options.Init]). The pool or client that Open creates is closed by
// the Backend's Close. opts may be nil.
func Open(ctx context.Context, rawURL string, opts *Options) (*backend.Backend, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	if rawURL == "" || rawURL == "memory" || rawURL == "memory://" {
		return memstore.NewBackend(), nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: not a URL", ErrBadURL)
	}
	orig := *u
	switch u.Scheme {
	case "postgres", "postgresql":
		b, err := openPostgres(ctx, u, o)
		return b, scrub(err, &orig)
	case "redis", "rediss":
		b, err := openRedis(ctx, u, o)
		return b, scrub(err, &orig)
	case "redis+cluster", "rediss+cluster":
		b, err := openRedisCluster(ctx, u, o)
		return b, scrub(err, &orig)
	}
	return nil, fmt.Errorf("%w: want memory, postgres://…, redis://… or redis+cluster://…, not %q", ErrBadURL, u.Scheme+"://…")
}

// secretParams are the query parameters of PostgreSQL and Redis URLs that
// carry credentials.
var secretParams = []string{"password", "sslpassword", "pass", "passwd", "pwd", "secret", "token", "sslkey"}

// Redact returns rawURL with every credential hidden, for logs and error
// messages: the password of the user information and the query
// parameters that carry one (password=, sslpassword=, ...).
func Redact(rawURL string) string {
	if rawURL == "" || rawURL == "memory" {
		return "memory"
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return redactURL(u)
}

func redactURL(u *url.URL) string {
	c := *u
	if q := c.Query(); len(q) > 0 {
		changed := false
		for name := range q {
			if slices.Contains(secretParams, strings.ToLower(name)) {
				q.Set(name, "xxxxx")
				changed = true
			}
		}
		if changed {
			c.RawQuery = q.Encode()
		}
	}
	return c.Redacted()
}

// secrets returns the credential values in u, for scrubbing them from the
// errors of client libraries.
func secrets(u *url.URL) []string {
	var out []string
	if p, ok := u.User.Password(); ok && p != "" {
		out = append(out, p, url.QueryEscape(p), url.PathEscape(p))
	}
	for name, vs := range u.Query() {
		if slices.Contains(secretParams, strings.ToLower(name)) {
			for _, v := range vs {
				if v != "" {
					out = append(out, v, url.QueryEscape(v))
				}
			}
		}
	}
	return out
}

// scrub returns err with every secret of u replaced, or err itself when it
// holds none.
func scrub(err error, u *url.URL) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := msg
	for _, s := range secrets(u) {
		clean = strings.ReplaceAll(clean, s, "xxxxx")
	}
	if clean == msg {
		return err
	}
	return &scrubbedError{msg: clean, err: err}
}

// scrubbedError is an error whose message had credentials removed; it
// still matches what the original matched.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

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

func openPostgres(ctx context.Context, u *url.URL, o Options) (*backend.Backend, error) {
	schema := takeParam(u, "schema")
	sizeSet := u.Query().Has("pool_max_conns")
	pcfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadURL, err)
	}
	if !sizeSet {
		pcfg.MaxConns = max(pcfg.MaxConns, int32(o.Workers)+8)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres %s: %w", redactURL(u), err)
	}
	b, err := pgstore.NewBackend(ctx, pool, &pgstore.Config{Schema: schema, Logger: o.Logger, SkipMigrate: o.SkipMigrate})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	b.OnClose(func() error { pool.Close(); return nil })
	return b, nil
}

func openRedis(ctx context.Context, u *url.URL, o Options) (*backend.Backend, error) {
	prefix := takeParam(u, "prefix")
	if strings.ContainsAny(prefix, "{}") {
		return nil, fmt.Errorf("%w: the Redis prefix must not contain braces", ErrBadURL)
	}
	opts, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadURL, err)
	}
	client := redis.NewClient(opts)
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		return nil, fmt.Errorf("redis %s: %w", redactURL(u), err)
	}
	return newRedisBackend(ctx, client, prefix, o)
}

// maxClusterNodes bounds the node list of a cluster URL.
const maxClusterNodes = 64

func openRedisCluster(ctx context.Context, u *url.URL, o Options) (*backend.Backend, error) {
	prefix := takeParam(u, "prefix")
	if strings.ContainsAny(prefix, "{}") {
		return nil, fmt.Errorf("%w: the Redis prefix must not contain braces", ErrBadURL)
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		return nil, fmt.Errorf("%w: a Redis Cluster has no database %q", ErrBadURL, p)
	}
	if u.Query().Has("addr") {
		return nil, fmt.Errorf("%w: list the cluster's nodes in the host, separated by commas", ErrBadURL)
	}
	hosts := strings.Split(u.Host, ",")
	if len(hosts) > maxClusterNodes {
		return nil, fmt.Errorf("%w: more than %d cluster nodes", ErrBadURL, maxClusterNodes)
	}
	for _, h := range hosts {
		if _, port, err := net.SplitHostPort(h); err != nil || port == "" {
			return nil, fmt.Errorf("%w: cluster node %q is not host:port", ErrBadURL, h)
		}
	}
	// go-redis's form: the first node as the host, the others as addr
	// parameters.
	g := *u
	g.Scheme = strings.TrimSuffix(u.Scheme, "+cluster")
	g.Host = hosts[0]
	g.Path = ""
	q := g.Query()
	for _, h := range hosts[1:] {
		q.Add("addr", h)
	}
	g.RawQuery = q.Encode()
	opts, err := redis.ParseClusterURL(g.String())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadURL, err)
	}
	client := redisstore.NewClusterClient(opts)
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		return nil, fmt.Errorf("redis cluster %s: %w", redactURL(u), err)
	}
	return newRedisBackend(ctx, client, prefix, o)
}

// newRedisBackend sets up a Redis store over client and returns it as a
// backend that closes client.
func newRedisBackend(ctx context.Context, client redis.UniversalClient, prefix string, o Options) (*backend.Backend, error) {
	rs, err := redisstore.New(client, &redisstore.Config{Prefix: prefix, Logger: o.Logger, Init: o.Init, SkipMigrate: o.SkipMigrate})
	if err == nil {
		// Persistence read and logged, marker read (or written, with
		// Init), before the first request.
		err = rs.Setup(ctx)
	}
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("redis: %w", err)
	}
	b := rs.Backend()
	b.OnClose(client.Close)
	return b, nil
}
