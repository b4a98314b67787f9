package pgstore

import (
	"context"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Statements that name the partitions they need. PostgreSQL prunes the
// partitions of a partitioned table when it plans a statement, from its
// constants, or when it starts running it, from its parameters. Only the
// first helps a prepared statement: the generic plan of a statement whose
// bounds are parameters still opens and locks every partition (and every
// index of each) at each run, beyond the few locks a session takes
// cheaply, and an UPDATE sets up every partition as a target whatever it
// prunes. So the statements on jobs by id carry the day of their ids as
// constants in their text ({first} and {last}): their plans, generic or
// not, touch that day's partition alone, and there is one statement text
// per day, prepared once per connection.

// dayMask covers the counter part of an id (see migration 014).
const dayMask = 1<<32 - 1

// dayBounds returns the first and last ids of the days of lo and hi.
func dayBounds(lo, hi int64) (first, last int64) {
	return lo &^ dayMask, hi | dayMask
}

// sqlIDs is [Store.sql] for a statement bounded to the ids first..last.
// The texts are kept (a few a day), so that a statement costs no more to
// name than one without bounds.
func (s *Store) sqlIDs(query string, first, last int64) string {
	key := boundedSQL{query, first, last}
	if q, ok := s.texts.Load(key); ok {
		return q.(string)
	}
	q := strings.NewReplacer(
		"{schema}", s.ident,
		"{first}", strconv.FormatInt(first, 10),
		"{last}", strconv.FormatInt(last, 10),
	).Replace(query)
	if s.textCount.Add(1) > maxTexts {
		// Days long gone: start again rather than keep them all.
		s.texts.Clear()
		s.textCount.Store(1)
	}
	s.texts.Store(key, q)
	return q
}

// boundedSQL names a statement bounded to the ids first..last.
type boundedSQL struct {
	query       string
	first, last int64
}

// maxTexts bounds the statement texts a store keeps.
const maxTexts = 256

// The lease floor. Leasing takes the oldest available jobs, so it looks
// at every partition that may hold one; with a partition a day, kept
// for the days of retention, most of them hold nothing but finished
// jobs. The floor is the first day that may hold a job that is not
// finished: every available or running job is of that day or later, and
// so is every job enqueued from then on, since a finished job never
// comes back and a new id carries the day of its enqueuing. Leases look
// from the floor to the end of today. The floor is read from the partial
// indexes of available and running jobs when the store first leases and
// again every floorRecheck, so it follows the oldest unfinished job up,
// and down to a job that came in below it.
//
// What the range can miss is a job it did not cover when it was read: one
// written below the floor since (by a transaction that began more than an
// hour before midnight), or above today (by a database whose clock is
// ahead of this host's). So when the range holds too few ready jobs, a
// lease also sweeps the whole table for the rest; but that form plans and
// locks every partition and each index of each, so a store sweeps at most
// once a floorRecheck, and again at once after a sweep that found jobs,
// until one finds none. An idle pool polling, or the tail of a queue,
// costs the range's few partitions, and a job outside the range waits at
// most a floorRecheck longer than it would.

// floorRecheck is how often the floor is read again.
const floorRecheck = 10 * time.Second

// leaseFloor is a store's lease floor.
type leaseFloor struct {
	mu      sync.Mutex
	known   bool      // day has been read
	day     int64     // the floor, in days since 1970-01-01
	checked time.Time // when day was read
	reading bool      // a lease is reading it

	sweptAt  time.Time // when a lease last swept the whole table
	sweeping bool      // a lease is sweeping it
	found    bool      // the last sweep found jobs
}

// sweepDue reports whether a lease at now that found too few jobs in its
// range sweeps the whole table: no other lease is, and none did in the
// last floorRecheck, or the last one found jobs. A lease told yes calls
// swept when done.
func (s *Store) sweepDue(now time.Time) bool {
	f := &s.floor
	f.mu.Lock()
	defer f.mu.Unlock()
	due := !f.sweeping && (f.found || f.sweptAt.IsZero() || now.Sub(f.sweptAt) >= floorRecheck || now.Before(f.sweptAt))
	if due {
		f.sweeping = true
	}
	return due
}

// swept records a sweep that began at now: whether it ran (a sweep that
// failed is due again at once) and whether it found jobs. Jobs found
// may lie below the floor, which is then read again at the next lease.
func (s *Store) swept(now time.Time, ran, found bool) {
	f := &s.floor
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sweeping = false
	if !ran {
		return
	}
	f.sweptAt, f.found = now, found
	if found {
		f.checked = time.Time{}
	}
}

// floorSQL reads the floor: the day of the oldest available or running
// job, and at the latest the day an hour ago, so that a job enqueued by
// a transaction that began before midnight and commits after it (its id
// carries the day it began) is never below the floor. The oldest
// available job is the first entry of the partial index of available
// jobs, which is in id order; the running jobs are read whole from their
// own partial index (OFFSET 0 keeps the planner from looking for the
// smallest id in the primary key instead, through every finished job).
const floorSQL = `
	SELECT least(
		(SELECT min(id) FROM {schema}.jobs WHERE state = 'available'),
		(SELECT min(r.id) FROM (SELECT id FROM {schema}.jobs WHERE state = 'running' OFFSET 0) AS r),
		(floor(extract(epoch FROM now() - interval '1 hour'))::bigint / 86400) << 32
	) >> 32`

// leaseRange returns the first and last ids a lease looks at first: from
// the floor to the end of today, or every id while the floor is unknown.
// Reading the floor is left to one lease at a time; the others go on
// with the floor they know.
func (s *Store) leaseRange(ctx context.Context, now time.Time) (first, last int64) {
	f := &s.floor
	f.mu.Lock()
	read := (!f.known || now.Sub(f.checked) >= floorRecheck) && !f.reading
	if read {
		f.reading = true
	}
	f.mu.Unlock()
	if read {
		var d int64
		err := s.pool.QueryRow(ctx, s.sql(floorSQL)).Scan(&d)
		f.mu.Lock()
		f.reading = false
		if err == nil {
			f.known, f.day, f.checked = true, d, now
		}
		f.mu.Unlock()
		// On an error the floor read before stays, and is read again at
		// the next lease; with none, the lease looks at the whole table.
		// The lease reports the database's trouble itself.
	}
	f.mu.Lock()
	known, d := f.known, f.day
	f.mu.Unlock()
	if !known {
		return 0, math.MaxInt64
	}
	// The end of today, or of the floor's day when the database's clock
	// is ahead of this host's.
	end := max(dayNumber(day(now)), d)
	return d << 32, end<<32 | dayMask
}
