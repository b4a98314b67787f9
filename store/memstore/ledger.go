package memstore

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/validmail/validmail/credits"
)

// ledger is one account's credit history. Entries live in chunks that
// double in size up to ledgerChunk, so that appending never copies the
// entries already there (an account charged per request grows by
// millions), and are kept compact: the id is formatted and the account
// filled in only when read.
type ledger struct {
	chunks [][]entry
	idem   map[string]entryRef // idempotency key → its entry
	// totals holds per day (days since the epoch, UTC) and reason the
	// sum and count of the entries, kept as they are appended.
	totals map[int64]map[credits.Reason]*sumCount
}

// sumCount is a [credits.DayTotal]'s figures.
type sumCount struct{ sum, count int64 }

// ledgerChunk is the largest chunk of a ledger.
const ledgerChunk = 4096

// entry is a [credits.Entry] as a ledger keeps it.
type entry struct {
	seq       uint64
	delta     int64
	reason    credits.Reason
	reference string
	key       string
	at        time.Time
}

// entryRef locates an entry in a ledger.
type entryRef struct{ chunk, off int32 }

// append adds e and returns where it is.
func (l *ledger) append(e entry) entryRef {
	n := len(l.chunks)
	if n == 0 || len(l.chunks[n-1]) == cap(l.chunks[n-1]) {
		size := 8
		if n > 0 {
			size = min(2*cap(l.chunks[n-1]), ledgerChunk)
		}
		l.chunks = append(l.chunks, make([]entry, 0, size))
		n++
	}
	l.chunks[n-1] = append(l.chunks[n-1], e)
	day := e.at.Unix() / secondsPerDay
	if e.at.Unix() < 0 && e.at.Unix()%secondsPerDay != 0 {
		day--
	}
	if l.totals == nil {
		l.totals = make(map[int64]map[credits.Reason]*sumCount)
	}
	byReason := l.totals[day]
	if byReason == nil {
		byReason = make(map[credits.Reason]*sumCount)
		l.totals[day] = byReason
	}
	sc := byReason[e.reason]
	if sc == nil {
		sc = &sumCount{}
		byReason[e.reason] = sc
	}
	sc.sum += e.delta
	sc.count++
	return entryRef{int32(n - 1), int32(len(l.chunks[n-1]) - 1)}
}

// len returns the number of entries.
func (l *ledger) len() int {
	total := 0
	for _, c := range l.chunks {
		total += len(c)
	}
	return total
}

// entries returns the history of account, oldest first.
func (l *ledger) entries(account string) []credits.Entry {
	if l == nil {
		return nil
	}
	out := make([]credits.Entry, 0, l.len())
	for _, c := range l.chunks {
		for _, e := range c {
			out = append(out, e.public(account))
		}
	}
	return out
}

// secondsPerDay is the length of a UTC day.
const secondsPerDay = 24 * 60 * 60

// page returns the entries p selects, newest first: a binary search for
// p.Before, then the page, so the cost does not grow with the history.
func (l *ledger) page(account string, p credits.PageParams) credits.Page {
	if l == nil {
		return credits.Page{Entries: []credits.Entry{}}
	}
	// Entries' seqs increase through the chunks; find the first chunk and
	// offset at or after before.
	chunk, off := len(l.chunks), 0
	if p.Before != "" {
		before, _ := credits.ParseID(p.Before)
		chunk, _ = slices.BinarySearchFunc(l.chunks, before, func(c []entry, id uint64) int {
			return cmp.Compare(c[len(c)-1].seq, id)
		})
		if chunk < len(l.chunks) {
			off, _ = slices.BinarySearchFunc(l.chunks[chunk], before, func(e entry, id uint64) int {
				return cmp.Compare(e.seq, id)
			})
		}
	}
	if chunk == len(l.chunks) {
		chunk, off = len(l.chunks)-1, len(l.chunks[len(l.chunks)-1])
	}
	out := credits.Page{Entries: make([]credits.Entry, 0, min(p.Limit, 64))}
	for chunk >= 0 {
		if off == 0 {
			chunk--
			if chunk >= 0 {
				off = len(l.chunks[chunk])
			}
			continue
		}
		if len(out.Entries) == p.Limit {
			out.More = true
			break
		}
		off--
		out.Entries = append(out.Entries, l.chunks[chunk][off].public(account))
	}
	return out
}

// dayTotals returns the totals of days [from, to), UTC midnights.
func (l *ledger) dayTotals(from, to time.Time) []credits.DayTotal {
	out := []credits.DayTotal{}
	if l == nil {
		return out
	}
	for d := from; d.Before(to); d = d.AddDate(0, 0, 1) {
		for reason, sc := range l.totals[d.Unix()/secondsPerDay] {
			out = append(out, credits.DayTotal{Day: d, Reason: reason, Sum: sc.sum, Count: sc.count})
		}
	}
	credits.SortTotals(out)
	return out
}

// public is e as [credits.Store] reports it.
func (e entry) public(account string) credits.Entry {
	return credits.Entry{
		ID:             strconv.FormatUint(e.seq, 10),
		AccountID:      account,
		Delta:          e.delta,
		Reason:         e.reason,
		Reference:      e.reference,
		IdempotencyKey: e.key,
		Time:           e.at,
	}
}
