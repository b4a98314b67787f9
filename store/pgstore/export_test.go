package pgstore

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PartitionsVersion is the migration that partitions jobs and batches.
var PartitionsVersion = migrationNamed("_partitions.sql")

// TotalsVersion is the migration that keeps per-day credit totals.
var TotalsVersion = migrationNamed("_credit_totals.sql")

// DelayedVersion is the migration that keeps delayed jobs out of the
// turn index.
var DelayedVersion = migrationNamed("_delayed_jobs.sql")

// UnjudgedVersion is the migration that gives a job's count of unjudged
// attempts a column of its own.
var UnjudgedVersion = migrationNamed("_job_unjudged.sql")

// DeliveryBatchVersion is the migration that gives a batch.completed
// delivery's data a column of its own.
var DeliveryBatchVersion = migrationNamed("_delivery_batch.sql")

// migrationNamed returns the version of the migration whose file name
// ends in suffix.
func migrationNamed(suffix string) int {
	for _, m := range migrations() {
		if strings.HasSuffix(m.name, suffix) {
			return m.version
		}
	}
	panic("no migration named *" + suffix)
}

// OpenAtVersion returns a Store on schema migrated up to version and no
// further, as an earlier release of this package left it.
func OpenAtVersion(ctx context.Context, pool *pgxpool.Pool, schema string, version int) (*Store, error) {
	s := &Store{pool: pool, schema: schema, ident: quoteIdent(schema), logger: slog.New(slog.DiscardHandler), subs: map[chan struct{}]struct{}{}}
	return s, s.migrateTo(ctx, version)
}

// LeaseRange returns the ids a lease at now looks at first.
func (s *Store) LeaseRange(ctx context.Context, now time.Time) (first, last int64) {
	return s.leaseRange(ctx, now)
}

// OpenUnpartitioned returns a Store on schema with every migration but
// the partitioning of jobs and batches: plain tables with ids of the same
// form, so that benchmarks can set the two layouts side by side under the
// same code.
func OpenUnpartitioned(ctx context.Context, pool *pgxpool.Pool, schema string) (*Store, error) {
	s, err := OpenAtVersion(ctx, pool, schema, PartitionsVersion-1)
	if err != nil {
		return nil, err
	}
	for _, stmt := range []string{
		`CREATE FUNCTION {schema}.next_job_id() RETURNS bigint LANGUAGE sql VOLATILE AS $$
		    SELECT ((floor(extract(epoch FROM now()))::bigint / 86400) << 32) | (nextval('{schema}.jobs_id_seq') & 4294967295)
		$$`,
		`ALTER TABLE {schema}.jobs ALTER COLUMN id SET DEFAULT {schema}.next_job_id()`,
		`INSERT INTO {schema}.schema_migrations (version, name) VALUES (` + strconv.Itoa(PartitionsVersion) + `, 'skipped: unpartitioned')`,
	} {
		if _, err := pool.Exec(ctx, s.sql(stmt)); err != nil {
			return nil, err
		}
	}
	return s, s.Migrate(ctx)
}

// AgeLeaseFloor makes the store's lease floor and its last sweep of the
// whole table d older, as if d had passed since.
func (s *Store) AgeLeaseFloor(d time.Duration) {
	s.floor.mu.Lock()
	defer s.floor.mu.Unlock()
	s.floor.checked = s.floor.checked.Add(-d)
	s.floor.sweptAt = s.floor.sweptAt.Add(-d)
}

// StepClockBack makes the store's record of its last look for delayed
// jobs come due lie d ahead of it, as a step of the host's wall clock d
// back (a correction of the time) leaves it.
func (s *Store) StepClockBack(d time.Duration) {
	s.promoted.Add(int64(d))
}

// ExplainLease returns the plan of a lease of up to max jobs, planned as
// Lease plans it.
func (s *Store) ExplainLease(ctx context.Context, max int) (string, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, leaseSettingsSQL); err != nil {
		return "", err
	}
	first, last := s.leaseRange(ctx, time.Now())
	rows, err := tx.Query(ctx, "EXPLAIN "+s.sqlIDs(leaseSQL, first, last), max, time.Minute.Microseconds())
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(lines, "\n"), err
}
