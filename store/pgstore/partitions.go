package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The jobs and batches tables are partitioned by day through their ids: a
// job's id is (days since 1970-01-01 UTC) * 2^32 plus a counter, and a
// batch's id is its first job's, so each day is one range of ids (see
// migration 014). A lookup by id touches one partition; ids grow with
// time as before. Retention drops a day's partition once every row in it
// has finished before the cutoff, so a day of completed jobs leaves the
// database as one DROP TABLE instead of a DELETE per row, and the tables
// never bloat. The partitions of the days ahead are made by the store
// itself, when it opens and at every Cleanup; a default partition takes
// the ids of a day without one until its partition is made.

// PartitionDaysAhead is how many days ahead of today the store keeps
// partitions of its jobs and batches tables. Cleanup runs hourly, so two
// days are ample, and every partition more is one more for each query on
// the tables to plan and lock.
const PartitionDaysAhead = 2

// partitionLockClass is the first key of the advisory lock under which one
// process at a time maintains a schema's partitions.
const partitionLockClass = lockClass + 1

// partitionedTable is a table partitioned by day and what keeps its rows.
type partitionedTable struct {
	name string
	// keep is a condition on a row, with $1 the cutoff, true for a row
	// that must stay: not finished, or finished at or after the cutoff.
	keep string
}

var partitionedTables = []partitionedTable{
	{name: "jobs", keep: `state <> 'completed' OR completed_at >= $1`},
	{name: "batches", keep: `completed_at IS NULL OR completed_at >= $1`},
}

// day is a UTC calendar day, as its midnight.
func day(t time.Time) time.Time {
	return t.UTC().Truncate(24 * time.Hour)
}

// dayNumber is the number of d's day since 1970-01-01 (UTC).
func dayNumber(d time.Time) int64 { return d.Unix() / 86400 }

// dayIDs returns the range of ids of day d: [from, to).
func dayIDs(d time.Time) (from, to int64) {
	n := dayNumber(d)
	return n << 32, (n + 1) << 32
}

// DayOfID returns the UTC day a job or batch id of this store was made
// on; ids made before the store partitioned its tables give 1970-01-01.
func DayOfID(id int64) time.Time {
	return time.Unix((id>>32)*86400, 0).UTC()
}

// partitionName is the name of table's partition for the day.
func partitionName(table string, d time.Time) string {
	return table + "_p" + d.Format("20060102")
}

// partitionDay parses a partition's name back into its day.
func partitionDay(table, name string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(name, table+"_p")
	if !ok || len(rest) != 8 {
		return time.Time{}, false
	}
	d, err := time.Parse("20060102", rest)
	return d, err == nil
}

// EnsurePartitions makes the partitions of the jobs and batches tables for
// yesterday through [PartitionDaysAhead] days after now, moving into each
// the rows the default partition holds for its day. It is safe to call
// from several processes at once: one does the work, under an advisory
// lock, and the others return at once. New and [Store.Cleanup] call it;
// a host that never runs Cleanup calls it daily.
func (s *Store) EnsurePartitions(ctx context.Context, now time.Time) error {
	_, err := s.withPartitionLock(ctx, func(conn *pgx.Conn) error {
		return s.ensurePartitions(ctx, conn, now)
	})
	return err
}

// withPartitionLock runs f on a connection holding the schema's advisory
// lock of partition maintenance, and reports whether it ran: when another
// process holds the lock, it is doing the same work, and f is skipped.
// Creating, moving into and dropping partitions from two processes at
// once would deadlock (each holding a partition the other's DROP or
// ATTACH waits for) or fail on a partition the other just dropped.
func (s *Store) withPartitionLock(ctx context.Context, f func(conn *pgx.Conn) error) (bool, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, fail(ctx, "partitions", err)
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext($2))`, partitionLockClass, s.schema).Scan(&locked); err != nil {
		return false, fail(ctx, "partitions: lock", err)
	}
	if !locked {
		return false, nil
	}
	defer func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, hashtext($2))`, partitionLockClass, s.schema); err != nil {
			// A session that cannot say it let go must not go back to
			// the pool still holding the lock.
			conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()
	return true, f(conn.Conn())
}

// ensurePartitions is EnsurePartitions on a connection holding the lock.
func (s *Store) ensurePartitions(ctx context.Context, conn *pgx.Conn, now time.Time) error {
	first := day(now).AddDate(0, 0, -1)
	for _, t := range partitionedTables {
		existing, err := s.partitions(ctx, conn, t.name)
		if err != nil {
			return err
		}
		for i := 0; i <= PartitionDaysAhead+1; i++ {
			d := first.AddDate(0, 0, i)
			if existing[d] {
				continue
			}
			if err := s.createPartition(ctx, conn, t.name, d); err != nil {
				return err
			}
		}
	}
	return nil
}

// partitions returns the days of table's partitions.
func (s *Store) partitions(ctx context.Context, conn *pgx.Conn, table string) (map[time.Time]bool, error) {
	rows, err := conn.Query(ctx, `
		SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = to_regclass($1)`, s.ident+"."+quoteIdent(table))
	if err != nil {
		return nil, fail(ctx, "partitions: list", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fail(ctx, "partitions: list", err)
	}
	days := make(map[time.Time]bool, len(names))
	for _, n := range names {
		if d, ok := partitionDay(table, n); ok {
			days[d] = true
		}
	}
	return days, nil
}

// createPartition makes table's partition for day d in one transaction:
// a table like the parent, the default partition's rows of that day moved
// into it, then attached. Attaching takes a weaker lock on the parent
// than creating the partition in place, so jobs keep flowing meanwhile;
// the default partition is locked for the whole step.
func (s *Store) createPartition(ctx context.Context, conn *pgx.Conn, table string, d time.Time) error {
	parent := s.ident + "." + quoteIdent(table)
	part := s.ident + "." + quoteIdent(partitionName(table, d))
	def := s.ident + "." + quoteIdent(table+"_default")
	from, to := dayIDs(d)
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fail(ctx, "partitions: create", err)
	}
	defer rollback(tx)
	for _, q := range []string{
		`SET LOCAL lock_timeout = '5s'`,
		// The default partition first, the lock ATTACH takes on it in
		// the end: taken after the move, it would wait for workers
		// that wait for the moved rows, a deadlock.
		fmt.Sprintf(`LOCK TABLE %s IN ACCESS EXCLUSIVE MODE`, def),
		fmt.Sprintf(`CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`, part, parent),
	} {
		if _, err := tx.Exec(ctx, q); err != nil {
			return fail(ctx, "partitions: create "+partitionName(table, d), err)
		}
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf(`
		WITH moved AS (DELETE FROM %s WHERE id >= $1 AND id < $2 RETURNING *)
		INSERT INTO %s SELECT * FROM moved`, def, part), from, to); err != nil {
		return fail(ctx, "partitions: move "+partitionName(table, d), err)
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM (%d) TO (%d)`,
		parent, part, from, to)); err != nil {
		return fail(ctx, "partitions: attach "+partitionName(table, d), err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fail(ctx, "partitions: create "+partitionName(table, d), err)
	}
	s.logger.Debug("pgstore: partition created", "table", table, "day", d.Format(time.DateOnly))
	return nil
}

// dropExpired removes table's rows that are finished before the start of
// cutoff's day. A day's partition that ends by then and holds nothing to
// keep is dropped whole; one that still holds a row to keep (a job
// retried for days) has its finished rows deleted; the default partition
// is trimmed row by row against cutoff itself. limit bounds the rows
// deleted one by one (0: no bound); whole partitions are not counted
// against it, as dropping one costs the same at any size. It returns how
// many rows went.
//
// It runs on a connection holding the lock of partition maintenance
// ([Store.withPartitionLock]).
func (s *Store) dropExpired(ctx context.Context, conn *pgx.Conn, t partitionedTable, cutoff time.Time, limit int) (int, error) {
	days, err := s.partitions(ctx, conn, t.name)
	if err != nil {
		return 0, err
	}
	var legacy bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, s.ident+"."+quoteIdent(t.name+"_legacy")).Scan(&legacy); err != nil {
		return 0, fail(ctx, "cleanup: "+t.name, err)
	}
	boundary := day(cutoff)
	removed := 0
	budget := func() *int64 {
		if limit <= 0 {
			return nil
		}
		n := int64(max(limit-removed, 0))
		return &n
	}
	// The partitions that ended by the cutoff's day: the days before it,
	// and the rows from before the partitioning, if they are still there.
	var ended []string
	for d := range days {
		if !d.AddDate(0, 0, 1).After(boundary) {
			ended = append(ended, partitionName(t.name, d))
		}
	}
	slices.Sort(ended)
	if legacy {
		ended = append(ended, t.name+"_legacy")
	}
	for _, name := range ended {
		part := s.ident + "." + quoteIdent(name)
		var blocked bool
		if err := conn.QueryRow(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %s WHERE %s)`, part, t.keep), boundary).Scan(&blocked); err != nil {
			return removed, fail(ctx, "cleanup: "+t.name, err)
		}
		if blocked {
			n, err := s.deleteFinished(ctx, conn, part, t, boundary, budget())
			removed += n
			if err != nil {
				return removed, err
			}
			continue
		}
		n, err := s.dropPartition(ctx, conn, part)
		if err != nil {
			return removed, err
		}
		removed += n
	}
	n, err := s.deleteFinished(ctx, conn, s.ident+"."+quoteIdent(t.name+"_default"), t, cutoff, budget())
	return removed + n, err
}

// dropPartition drops a partition with nothing to keep and returns how
// many rows it held. A lock the drop cannot get at once (a long query on
// the table) leaves the partition for the next cleanup.
func (s *Store) dropPartition(ctx context.Context, conn *pgx.Conn, part string) (int, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, fail(ctx, "cleanup", err)
	}
	defer rollback(tx)
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '2s'`); err != nil {
		return 0, fail(ctx, "cleanup", err)
	}
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+part).Scan(&n); err != nil {
		return 0, fail(ctx, "cleanup: count "+part, err)
	}
	if _, err := tx.Exec(ctx, `DROP TABLE `+part); err != nil {
		if isLockTimeout(err) {
			s.logger.Warn("pgstore: partition busy, dropped at the next cleanup", "partition", part)
			return 0, nil
		}
		return 0, fail(ctx, "cleanup: drop "+part, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fail(ctx, "cleanup: drop "+part, err)
	}
	return n, nil
}

// deleteFinished deletes the rows of one partition not kept at cutoff,
// at most limit of them when limit is not nil.
func (s *Store) deleteFinished(ctx context.Context, conn *pgx.Conn, part string, t partitionedTable, cutoff time.Time, limit *int64) (int, error) {
	tag, err := conn.Exec(ctx, fmt.Sprintf(`
		DELETE FROM %[1]s WHERE ctid IN (
			SELECT ctid FROM %[1]s WHERE NOT (%[2]s) LIMIT $2::bigint FOR UPDATE SKIP LOCKED
		)`, part, t.keep), cutoff, limit)
	if err != nil {
		return 0, fail(ctx, "cleanup: "+t.name, err)
	}
	return int(tag.RowsAffected()), nil
}

// isLockTimeout reports PostgreSQL's lock_not_available.
func isLockTimeout(err error) bool {
	var pgErr interface{ SQLState() string }
	return errors.As(err, &pgErr) && pgErr.SQLState() == "55P03"
}
