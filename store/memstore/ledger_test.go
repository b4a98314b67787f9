package memstore

import (
	"strconv"
	"testing"
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
