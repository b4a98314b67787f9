package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/store"
)

var (
	_ store.Accounts            = (*Store)(nil)
	_ store.PlanSetter          = (*Store)(nil)
	_ credits.Store             = (*Store)(nil)
	_ credits.PageStore         = (*Store)(nil)
	_ credits.TotalsStore       = (*Store)(nil)
	_ jobsdriver.Driver         = (*jobsDriver)(nil)
	_ jobsdriver.ChargingDriver = (*jobsDriver)(nil)
	_ jobsdriver.Notifier       = (*jobsDriver)(nil)
)

// Errors reported by a [Store] beside the domain packages' sentinels.
var (
	// ErrSchemaTooNew reports a schema migrated by a newer version of this
	// package than the running one: the code refuses to touch it. It
	// wraps [store.ErrTooNew].
	ErrSchemaTooNew = fmt.Errorf("pgstore: database schema is newer than this code: %w", store.ErrTooNew)
	// ErrSchemaOutdated reports, with [Config.SkipMigrate], a schema that
	// lacks migrations this code needs. It wraps [store.ErrNeedsMigration].
	ErrSchemaOutdated = fmt.Errorf("pgstore: database schema needs migrating: %w", store.ErrNeedsMigration)
)

// DefaultSchema is the schema a [Store] uses when [Config.Schema] is empty.
const DefaultSchema = "public"

// Config configures a [Store]. The zero value gives the defaults.
type Config struct {
	// Schema holds every table of the store. It is created by the
	// migrations when missing. Default [DefaultSchema].
	Schema string
	// SkipMigrate makes [New] check that the schema is at the current
	// version instead of migrating it, for deployments that run
	// [Store.Migrate] from a separate step.
	SkipMigrate bool
	// Logger receives the store's records (notification connection
	// trouble). Default: discard.
	Logger *slog.Logger
}

// Store is a PostgreSQL backend. It is safe for concurrent use by many
// goroutines and many processes sharing one database.
type Store struct {
	pool   *pgxpool.Pool
	schema string
	ident  string // schema, quoted as an identifier
	logger *slog.Logger

	mu       sync.Mutex
	subs     map[chan struct{}]struct{}
	listener *listener

	floor     leaseFloor   // where leases look first
	texts     sync.Map     // boundedSQL → statement text, see sqlIDs
	textCount atomic.Int64 // entries stored in texts
	promoted  atomic.Int64 // when delayed jobs were last promoted, in Unix ns
}

// New returns a Store over pool, which stays the caller's: the Store never
// closes it. Unless cfg.SkipMigrate is set, New applies the pending
// migrations ([Store.Migrate]); a schema newer than the code fails with
// [ErrSchemaTooNew]. cfg may be nil. New starts no goroutines.
func New(ctx context.Context, pool *pgxpool.Pool, cfg *Config) (*Store, error) {
	if pool == nil {
		return nil, errors.New("pgstore: nil pool")
	}
	var c Config
	if cfg != nil {
		c = *cfg
	}
	schema := cmp.Or(c.Schema, DefaultSchema)
	s := &Store{
		pool:   pool,
		schema: schema,
		ident:  quoteIdent(schema),
		logger: cmp.Or(c.Logger, slog.New(slog.DiscardHandler)),
		subs:   make(map[chan struct{}]struct{}),
	}
	if c.SkipMigrate {
		v, err := s.SchemaVersion(ctx)
		if err != nil {
			return nil, err
		}
		switch latest := latestVersion(); {
		case v > latest:
			return nil, s.tooNew(ctx, v, latest)
		case v < latest:
			return nil, fmt.Errorf("%w: schema %q is at version %d, code needs %d: run validmaild migrate (pgstore Store.Migrate) first", ErrSchemaOutdated, schema, v, latest)
		}
		s.ensurePartitionsAtStart(ctx)
		return s, nil
	}
	if err := s.Migrate(ctx); err != nil {
		return nil, err
	}
	s.ensurePartitionsAtStart(ctx)
	return s, nil
}

// ensurePartitionsAtStart makes the partitions of the days ahead as the
// store opens. A failure (a lock other sessions held too long) does not
// keep the store from opening: the default partition takes the rows of a
// day without its own until the next Cleanup makes it.
func (s *Store) ensurePartitionsAtStart(ctx context.Context) {
	if err := s.EnsurePartitions(ctx, time.Now()); err != nil {
		s.logger.WarnContext(ctx, "pgstore: partitions of the days ahead not made at start; the next cleanup makes them", "err", err)
	}
}

// Schema returns the schema the store's tables live in.
func (s *Store) Schema() string { return s.schema }

// sql returns query with {schema} replaced by the store's quoted schema.
func (s *Store) sql(query string) string {
	return strings.ReplaceAll(query, "{schema}", s.ident)
}

// quoteIdent quotes name as an SQL identifier.
func quoteIdent(name string) string { return pgx.Identifier{name}.Sanitize() }

// channel is the NOTIFY channel of the store's jobs table; the jobs_notify
// trigger computes the same name.
func (s *Store) channel() string {
	return "validmail_jobs_" + md5hex(s.schema)
}

// fail wraps err, returned by the database while doing op, so that callers
// can match it: ctx's error when ctx ended, [store.ErrUnavailable] when the
// connection failed, else the error itself.
func fail(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(err, cerr) {
			return fmt.Errorf("pgstore: %s: %w", op, err)
		}
		return fmt.Errorf("pgstore: %s: %w: %w", op, cerr, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("pgstore: %s: %w", op, err)
	}
	if unavailable(err) {
		return fmt.Errorf("pgstore: %s: database unavailable: %w: %w", op, store.ErrUnavailable, err)
	}
	return fmt.Errorf("pgstore: %s: %w", op, err)
}

// unavailable reports whether err means the server could not be reached or
// the connection broke, rather than a refusal of the statement itself.
func unavailable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			pgErr.Code == "57P01", // admin_shutdown
			pgErr.Code == "57P02", // crash_shutdown
			pgErr.Code == "57P03", // cannot_connect_now
			pgErr.Code == "53300": // too_many_connections
			return true
		}
		return false
	}
	var netErr net.Error
	var connectErr *pgconn.ConnectError
	return errors.As(err, &netErr) || errors.As(err, &connectErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || pgconn.SafeToRetry(err) ||
		// pgx reports a closed pool or connection with plain errors.
		strings.Contains(err.Error(), "closed pool") || strings.Contains(err.Error(), "conn closed")
}

// isUniqueViolation reports whether err is a unique_violation on the named
// constraint or index (any, when name is empty).
func isUniqueViolation(err error, name string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && (name == "" || pgErr.ConstraintName == name)
}

// isForeignKeyViolation reports whether err is a foreign_key_violation.
func isForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503"
}

// rollback ends tx after a failure; its own error adds nothing.
func rollback(tx pgx.Tx) {
	_ = tx.Rollback(context.Background())
}
