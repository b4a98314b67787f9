package pgstore

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// PartitionsVersion is the migration that partitions jobs and batches.
var PartitionsVersion = migrationNamed("_partitions.sql")

// TotalsVersion is the migration that keeps per-day credit totals.
var TotalsVersion = migrationNamed("_credit_totals.sql")

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
