package jobstest

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

// RunListDrafts checks that backends made by newBackend keep lists
// waiting for their confirmation as [jobsdriver.ListDraftDriver] promises: a
// draft and its chunks are read back from the store, one an account, a
// bounded number a network, taken once, gone when expired or deleted.
// Each subtest runs in parallel on its own backend; a driver without
// drafts skips them.
func RunListDrafts(t *testing.T, newBackend func(tb testing.TB) Backend) {
	tests := []struct {
		name string
		f    func(t *testing.T, d *draftBundle)
	}{
		{"PutAndRead", testDraftPutAndRead},
		{"OneAnAccount", testDraftOneAnAccount},
		{"Restore", testDraftRestore},
		{"PerNetwork", testDraftPerNetwork},
		{"TakenOnce", testDraftTakenOnce},
		{"Expired", testDraftExpired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t).check(t)
			q, err := jobs.NewQueue(b.Driver, credits.New(b.Credits, nil), nil)
			if err != nil {
				t.Fatal(err)
			}
			dd, err := q.ListDrafts()
			if errors.Is(err, jobs.ErrNoListDrafts) {
				t.Skip("the driver keeps no list drafts")
			}
			tc.f(t, &draftBundle{d: dd, ctx: t.Context()})
		})
	}
}

type draftBundle struct {
	d   jobsdriver.ListDraftDriver
	ctx context.Context
}

// put stores a draft of account from network with chunks, living a
// minute, and returns it.
func (b *draftBundle) put(t *testing.T, account, network string, chunks ...string) jobtype.ListDraft {
	t.Helper()
	d := jobtype.ListDraft{ID: uuid.NewString(), AccountID: account, Network: network, Meta: []byte(`{"name":"` + account + `"}`),
		Chunks: len(chunks), ExpiresAt: time.Now().Add(time.Hour)}
	for i, c := range chunks {
		if err := b.d.PutListDraftChunk(b.ctx, d.ID, i, []byte(c), d.ExpiresAt); err != nil {
			t.Fatal(err)
		}
	}
	kept, err := b.d.PutListDraft(b.ctx, jobtype.PutListDraftParams{Draft: d, PerNetwork: 2})
	if err != nil || !kept {
		t.Fatalf("put: %v, kept %v", err, kept)
	}
	return d
}

// gone checks that draft d and its first chunk are gone.
func (b *draftBundle) gone(t *testing.T, d jobtype.ListDraft) {
	t.Helper()
	if _, err := b.d.ListDraft(b.ctx, d.AccountID, d.ID); !errors.Is(err, jobtype.ErrNotFound) {
		t.Fatalf("draft %s of %s: %v, want ErrNotFound", d.ID, d.AccountID, err)
	}
	if d.Chunks > 0 {
		if _, err := b.d.ListDraftChunk(b.ctx, d.ID, 0); !errors.Is(err, jobtype.ErrNotFound) {
			t.Fatalf("chunk of draft %s: %v, want ErrNotFound", d.ID, err)
		}
	}
}

// there checks that draft d is kept as it was put.
func (b *draftBundle) there(t *testing.T, d jobtype.ListDraft) {
	t.Helper()
	got, err := b.d.ListDraft(b.ctx, d.AccountID, d.ID)
	if err != nil || got.ID != d.ID || got.AccountID != d.AccountID || got.Network != d.Network || got.Chunks != d.Chunks || !bytes.Equal(got.Meta, d.Meta) {
		t.Fatalf("draft %s: %+v, %v; want %+v", d.ID, got, err, d)
	}
}

func testDraftPutAndRead(t *testing.T, b *draftBundle) {
	a := uuid.NewString()
	big := bytes.Repeat([]byte{0, 1, 2, 255}, 300<<10) // binary, 1.2 MiB
	d := b.put(t, a, "198.51.100.0/24", "first", string(big), "")
	b.there(t, d)
	for i, want := range [][]byte{[]byte("first"), big, {}} {
		got, err := b.d.ListDraftChunk(b.ctx, d.ID, i)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("chunk %d: %d bytes, %v", i, len(got), err)
		}
	}
	if _, err := b.d.ListDraftChunk(b.ctx, d.ID, 3); !errors.Is(err, jobtype.ErrNotFound) {
		t.Fatalf("a chunk past the last: %v", err)
	}
	if _, err := b.d.ListDraft(b.ctx, uuid.NewString(), d.ID); !errors.Is(err, jobtype.ErrNotFound) {
		t.Fatalf("another account's draft: %v", err)
	}
	if _, err := b.d.TakeListDraft(b.ctx, uuid.NewString(), d.ID); !errors.Is(err, jobtype.ErrNotFound) {
		t.Fatalf("another account's take: %v", err)
	}
	b.there(t, d)
	if err := b.d.DeleteListDraft(b.ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	b.gone(t, d)
	if err := b.d.DeleteListDraft(b.ctx, d.ID); err != nil {
		t.Fatalf("a second delete: %v", err)
	}
}

func testDraftOneAnAccount(t *testing.T, b *draftBundle) {
	a, other := uuid.NewString(), uuid.NewString()
	first := b.put(t, a, "", "one")
	o := b.put(t, other, "", "other")
	second := b.put(t, a, "", "two")
	b.gone(t, first)
	b.there(t, second)
	b.there(t, o)
}

func testDraftRestore(t *testing.T, b *draftBundle) {
	a := uuid.NewString()
	d := b.put(t, a, "n", "x")
	taken, err := b.d.TakeListDraft(b.ctx, a, d.ID)
	if err != nil || taken.ID != d.ID {
		t.Fatalf("take: %+v %v", taken, err)
	}
	if kept, err := b.d.PutListDraft(b.ctx, jobtype.PutListDraftParams{Draft: taken, Restore: true}); err != nil || !kept {
		t.Fatalf("restore with no other draft: %v %v", kept, err)
	}
	b.there(t, d)
	if _, err := b.d.TakeListDraft(b.ctx, a, d.ID); err != nil {
		t.Fatal(err)
	}
	newer := b.put(t, a, "n", "y")
	if kept, err := b.d.PutListDraft(b.ctx, jobtype.PutListDraftParams{Draft: taken, Restore: true}); err != nil || kept {
		t.Fatalf("restore beside a newer draft: %v %v", kept, err)
	}
	b.there(t, newer)
	if _, err := b.d.ListDraft(b.ctx, a, d.ID); !errors.Is(err, jobtype.ErrNotFound) {
		t.Fatalf("the refused restore is kept: %v", err)
	}
}

func testDraftPerNetwork(t *testing.T, b *draftBundle) {
	net, elsewhere := "192.0.2.0/24/"+uuid.NewString(), "203.0.113.0/24/"+uuid.NewString()
	d1 := b.put(t, uuid.NewString(), net, "1")
	e := b.put(t, uuid.NewString(), elsewhere, "e")
	d2 := b.put(t, uuid.NewString(), net, "2")
	d3 := b.put(t, uuid.NewString(), net, "3") // PerNetwork 2: d1 goes
	b.gone(t, d1)
	b.there(t, d2)
	b.there(t, d3)
	b.there(t, e)
	d4 := b.put(t, uuid.NewString(), net, "4")
	b.gone(t, d2)
	b.there(t, d3)
	b.there(t, d4)
}

func testDraftTakenOnce(t *testing.T, b *draftBundle) {
	a := uuid.NewString()
	d := b.put(t, a, "", "body")
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.d.TakeListDraft(b.ctx, a, d.ID)
			switch {
			case err == nil:
				mu.Lock()
				won++
				mu.Unlock()
			case !errors.Is(err, jobtype.ErrNotFound):
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d takes won", won)
	}
	if _, err := b.d.ListDraft(b.ctx, a, d.ID); !errors.Is(err, jobtype.ErrNotFound) {
		t.Fatalf("a taken draft: %v", err)
	}
	// The body stays for the taker until it deletes the draft.
	if got, err := b.d.ListDraftChunk(b.ctx, d.ID, 0); err != nil || string(got) != "body" {
		t.Fatalf("the taken draft's chunk: %q %v", got, err)
	}
	if err := b.d.DeleteListDraft(b.ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	b.gone(t, d)
}

func testDraftExpired(t *testing.T, b *draftBundle) {
	a := uuid.NewString()
	past := time.Now().Add(-time.Minute)
	d := jobtype.ListDraft{ID: uuid.NewString(), AccountID: a, Meta: []byte("m"), Chunks: 1, ExpiresAt: past}
	if err := b.d.PutListDraftChunk(b.ctx, d.ID, 0, []byte("old"), past); err != nil {
		t.Fatal(err)
	}
	if _, err := b.d.PutListDraft(b.ctx, jobtype.PutListDraftParams{Draft: d}); err != nil {
		t.Fatal(err)
	}
	b.gone(t, d)
	if _, err := b.d.TakeListDraft(b.ctx, a, d.ID); !errors.Is(err, jobtype.ErrNotFound) {
		t.Fatalf("take of an expired draft: %v", err)
	}
	// An expired draft does not count as the account's.
	fresh := b.put(t, a, "", "new")
	if kept, err := b.d.PutListDraft(b.ctx, jobtype.PutListDraftParams{Draft: d, Restore: true}); err != nil || kept {
		t.Fatalf("restore beside a fresh draft: %v %v", kept, err)
	}
	b.there(t, fresh)
}
