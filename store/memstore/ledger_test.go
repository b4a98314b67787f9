package memstore

import (
	"slices"
	"strconv"
	"testing"

	"github.com/validmail/validmail/credits"
)

// Entries come back in order across chunk boundaries, each where append
// said it was, and no chunk outgrows ledgerChunk.
func TestLedgerChunks(t *testing.T) {
	var l ledger
	const n = 3*ledgerChunk + 17
	refs := make([]entryRef, n)
	for i := range n {
		refs[i] = l.append(entry{seq: uint64(i + 1), delta: int64(i), key: strconv.Itoa(i)})
	}
	if l.len() != n {
		t.Fatalf("len %d, want %d", l.len(), n)
	}
	for i, ref := range refs {
		if e := l.chunks[ref.chunk][ref.off]; e.delta != int64(i) {
			t.Fatalf("entry %d found at %+v holds %d", i, ref, e.delta)
		}
	}
	for i, e := range l.entries("acct") {
		if e.Delta != int64(i) || e.ID != strconv.Itoa(i+1) || e.AccountID != "acct" || e.IdempotencyKey != strconv.Itoa(i) {
			t.Fatalf("entry %d: %+v", i, e)
		}
	}
	for i, c := range l.chunks {
		if cap(c) > ledgerChunk {
			t.Fatalf("chunk %d has capacity %d", i, cap(c))
		}
	}
}

// A page starts and ends anywhere: at chunk boundaries, inside chunks,
// before the first entry and after the last.
func TestLedgerPage(t *testing.T) {
	var l ledger
	const n = 2*ledgerChunk + 40
	for i := range n {
		l.append(entry{seq: uint64(2*i + 2)}) // even seqs: ids between entries name none
	}
	for _, before := range []int{1, 2, 3, 9, 10, 16, 17, 2 * 24, 2*24 + 1, 2 * ledgerChunk, 2*ledgerChunk + 3, 2 * n, 2*n + 1, 2*n + 2, 5 * n} {
		for _, limit := range []int{1, 7, 100, 5000} {
			p := l.page("acct", credits.PageParams{Before: strconv.Itoa(before), Limit: limit})
			var want []string
			for s := 2 * n; s >= 2; s -= 2 {
				if s < before && len(want) < limit {
					want = append(want, strconv.Itoa(s))
				}
			}
			more := len(want) == limit && want[limit-1] != "2"
			var got []string
			for _, e := range p.Entries {
				got = append(got, e.ID)
			}
			if !slices.Equal(got, want) || p.More != more {
				t.Fatalf("before %d, limit %d: %d entries from %v, more %v; want %d from %v, more %v",
					before, limit, len(got), first(got), p.More, len(want), first(want), more)
			}
		}
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return s[0]
}
