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

// partitionLockTimeout bounds the wait for the locks that making or
// dropping a partition takes. Dropping one locks the parent table and its
// default partition against every query, and each lease, completion and
// enqueuing that comes after the waiting drop queues behind it; so the
// wait is short, and a partition whose locks are not had in time is left
// to the next cleanup.
const partitionLockTimeout = 100 * time.Millisecond

// partitionedTable is a table partitioned by day and what keeps its rows.
type partitionedTable struct {
	name string
	// keep is a condition on a row, with $1 the cutoff, true for a row
	// that must stay: not finished, or finished at or after the cutoff.
	keep string
	// probes are conditions whose disjunction is keep, each answered by
	// one of the table's partial indexes, so that whether a partition
	// holds a row to keep is a few index probes, not a scan.
	probes []string
}

var partitionedTables = []partitionedTable{
	{
		name: "jobs",
		keep: `state <> 'completed' OR completed_at >= $1`,
		probes: []string{
			`state = 'available'`,                        // jobs_available_idx
			`state = 'running'`,                          // jobs_running_idx
			`state = 'completed' AND completed_at >= $1`, // jobs_completed_idx
		},
	},
	{
		name: "batches",
		keep: `completed_at IS NULL OR completed_at >= $1`,
		probes: []string{
			`completed_at IS NULL`,                            // batches_open_idx
			`completed_at IS NOT NULL AND completed_at >= $1`, // batches_completed_idx
		},
	},
}

// keepsSQL is a query, with $1 the cutoff, true when partition part of t
// holds a row to keep.
func (t partitionedTable) keepsSQL(part string) string {
	probes := make([]string, len(t.probes))
	for i, p := range t.probes {
		probes[i] = fmt.Sprintf(`EXISTS (SELECT 1 FROM %s WHERE %s)`, part, p)
	}
	return `SELECT ` + strings.Join(probes, ` OR `)
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

// ErrPartitionBusy reports a partition that could not be made or dropped
// because other sessions held the locks it needs for longer than the
// store waits for them (a long query on the table, say). Nothing is
// changed; the next attempt, at the latest the next Cleanup,
// tries again.
var ErrPartitionBusy = errors.New("pgstore: partition busy")

// errPartitionBusy is ErrPartitionBusy.
var errPartitionBusy = ErrPartitionBusy

// setLockTimeout bounds the lock waits of a partition's transaction.
var setLockTimeout = fmt.Sprintf(`SET LOCAL lock_timeout = '%dms'`, partitionLockTimeout.Milliseconds())

// ensureAttempts is how many times EnsurePartitions tries a partition
// whose locks are busy, and ensurePause how long it lets the queue run
// between two tries.
const (
	ensureAttempts = 10
	ensurePause    = 200 * time.Millisecond
)

// EnsurePartitions makes the partitions of the jobs and batches tables for
// yesterday through [PartitionDaysAhead] days after now, moving into each
// the rows the default partition holds for its day. It is safe to call
// from several processes at once: one does the work, under an advisory
// lock, and the others return at once. New and Cleanup call it;
// a host that never runs Cleanup calls it daily. Each partition waits
// briefly for its locks, a few times over; one still busy then is left
// undone, with an error wrapping [ErrPartitionBusy].
func (s *Store) EnsurePartitions(ctx context.Context, now time.Time) error {
	_, err := s.withPartitionLock(ctx, func(conn *pgx.Conn) error {
		return s.ensurePartitions(ctx, conn, now, ensureAttempts)
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

// ensurePartitions is EnsurePartitions on a connection holding the lock,
// trying each partition up to attempts times while its locks are busy.
// The partitions made are made even when another stays busy; the error
// then wraps [ErrPartitionBusy].
func (s *Store) ensurePartitions(ctx context.Context, conn *pgx.Conn, now time.Time, attempts int) error {
	first := day(now).AddDate(0, 0, -1)
	var busy []string
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
			err := s.createPartition(ctx, conn, t.name, d)
			for try := 1; errors.Is(err, errPartitionBusy) && try < attempts; try++ {
				select {
				case <-ctx.Done():
					return fail(ctx, "partitions", ctx.Err())
				case <-time.After(ensurePause):
				}
				err = s.createPartition(ctx, conn, t.name, d)
			}
			switch {
			case errors.Is(err, errPartitionBusy):
				busy = append(busy, partitionName(t.name, d))
			case err != nil:
				return err
			}
		}
	}
	if len(busy) > 0 {
		return fmt.Errorf("%w: %s not made", errPartitionBusy, strings.Join(busy, ", "))
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
// the default partition is locked for the whole step. A lock not had
// within partitionLockTimeout gives errPartitionBusy, nothing made.
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
		setLockTimeout,
		// The default partition first, the lock ATTACH takes on it in
		// the end: taken after the move, it would wait for workers
		// that wait for the moved rows, a deadlock.
		fmt.Sprintf(`LOCK TABLE %s IN ACCESS EXCLUSIVE MODE`, def),
		fmt.Sprintf(`CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`, part, parent),
	} {
		if _, err := tx.Exec(ctx, q); err != nil {
			if isLockTimeout(err) {
				return errPartitionBusy
			}
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
		if isLockTimeout(err) {
			return errPartitionBusy
		}
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
// many rows went, those of a dropped partition as the statistics count
// them (exact for a partition analyzed whole; see partitionRows).
//
// A partition whose locks are busy ends the dropping for this call: the
// others would likely wait on the same long query, each stalling the
// queue for partitionLockTimeout, and the next cleanup drops them all.
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
		// Asked first without the locks of a drop, so that a partition
		// that must stay costs no more than the probes.
		var keeps bool
		if err := conn.QueryRow(ctx, t.keepsSQL(part), boundary).Scan(&keeps); err != nil {
			return removed, fail(ctx, "cleanup: "+t.name, err)
		}
		if !keeps {
			n, err := s.dropPartition(ctx, conn, t, part, boundary)
			if errors.Is(err, errPartitionBusy) {
				s.logger.InfoContext(ctx, "pgstore: partition busy, dropped at a later cleanup", "partition", name)
				break
			}
			if err != nil {
				return removed, err
			}
			if n >= 0 {
				removed += n
				continue
			}
			// A row to keep came in meanwhile.
		}
		n, err := s.deleteFinished(ctx, conn, part, t, boundary, budget())
		removed += n
		if err != nil {
			return removed, err
		}
	}
	n, err := s.deleteFinished(ctx, conn, s.ident+"."+quoteIdent(t.name+"_default"), t, cutoff, budget())
	return removed + n, err
}

// dropPartition drops partition part of t when it holds nothing to keep
// at cutoff, and returns how many rows it held (see partitionRows), or
// -1 when it keeps a row after all. The locks of the drop are taken
// first, in the order DROP TABLE takes them (parent, partition, default
// partition), so that no row to keep comes in between the check and the
// drop, and the check is index probes, so the locks are held for
// moments. A lock not had within partitionLockTimeout gives
// errPartitionBusy, the partition left as it was.
func (s *Store) dropPartition(ctx context.Context, conn *pgx.Conn, t partitionedTable, part string, cutoff time.Time) (int, error) {
	rows, err := s.partitionRows(ctx, conn, part)
	if err != nil {
		return 0, err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, fail(ctx, "cleanup", err)
	}
	defer rollback(tx)
	for _, q := range []string{
		setLockTimeout,
		`LOCK TABLE ONLY ` + s.ident + "." + quoteIdent(t.name) + ` IN ACCESS EXCLUSIVE MODE`,
		`LOCK TABLE ` + part + ` IN ACCESS EXCLUSIVE MODE NOWAIT`,
		`LOCK TABLE ` + s.ident + "." + quoteIdent(t.name+"_default") + ` IN ACCESS EXCLUSIVE MODE`,
	} {
		if _, err := tx.Exec(ctx, q); err != nil {
			if isLockTimeout(err) {
				return 0, errPartitionBusy
			}
			return 0, fail(ctx, "cleanup: lock "+part, err)
		}
	}
	var keeps bool
	if err := tx.QueryRow(ctx, t.keepsSQL(part), cutoff).Scan(&keeps); err != nil {
		return 0, fail(ctx, "cleanup: "+t.name, err)
	}
	if keeps {
		return -1, nil
	}
	if _, err := tx.Exec(ctx, `DROP TABLE `+part); err != nil {
		if isLockTimeout(err) {
			return 0, errPartitionBusy
		}
		return 0, fail(ctx, "cleanup: drop "+part, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fail(ctx, "cleanup: drop "+part, err)
	}
	return rows, nil
}

// partitionRows returns how many rows a partition holds as its
// statistics count them, without reading it: exact when it was last
// analyzed or vacuumed whole, as a day's partition is long before it
// expires. Only a partition never analyzed is counted row by row.
func (s *Store) partitionRows(ctx context.Context, conn *pgx.Conn, part string) (int, error) {
	var n float64
	if err := conn.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE oid = $1::regclass`, part).Scan(&n); err != nil {
		return 0, fail(ctx, "cleanup: rows of "+part, err)
	}
	if n >= 0 {
		return int(n), nil
	}
	var c int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+part).Scan(&c); err != nil {
		return 0, fail(ctx, "cleanup: rows of "+part, err)
	}
	return c, nil
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
