package memstore

import (
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
}

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
