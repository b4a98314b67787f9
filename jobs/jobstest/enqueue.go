package jobstest

// Enqueueing batches, charged or not, and reading jobs back.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

func testEnqueueIDs(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	var all []string
	for i := range 3 {
		all = append(all, mustEnqueue(t, b, acct, 5+i)...)
	}
	checkIncreasing(t, all)
	for i, id := range all[:5] {
		j, err := b.q.Get(ctx, acct, id)
		if err != nil {
			t.Fatalf("Get(%s): %v", id, err)
		}
		if j.ID != id || j.AccountID != acct || j.Email != emails(5, acct)[i] || j.State != jobtype.StateActive ||
			j.Result != nil || j.Cost != 0 || j.CreatedAt.IsZero() || !j.CompletedAt.IsZero() {
			t.Fatalf("new job %+v", j)
		}
	}
	if _, err := b.q.Enqueue(ctx, acct, nil); !errors.Is(err, jobtype.ErrEmptyBatch) {
		t.Fatalf("empty batch: %v", err)
	}
	if _, err := b.Driver.Enqueue(ctx, jobtype.EnqueueParams{AccountID: acct}); !errors.Is(err, jobtype.ErrEmptyBatch) {
		t.Fatalf("driver, empty batch: %v", err)
	}
}

func testGetWithinAccount(t *testing.T, b *bundle) {
	ctx := context.Background()
	a, other := account(), account()
	ids := mustEnqueue(t, b, a, 2)
	if _, err := b.q.Get(ctx, a, ids[0]); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ acct, id string }{
		{other, ids[0]}, {other, ids[1]}, {a, "999999999999"}, {a, "abc"}, {a, ""}, {a, "-1"}, {a, ids[0] + "0000000000000000000000"},
	} {
		if j, err := b.q.Get(ctx, tc.acct, tc.id); !errors.Is(err, jobtype.ErrNotFound) {
			t.Errorf("Get(%q, %q) = %+v, %v; want ErrNotFound", tc.acct, tc.id, j, err)
		}
	}
}

func testChargedInsufficient(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	grant(t, b, acct, 3)
	_, err := b.q.EnqueueCharged(ctx, jobtype.EnqueueChargedParams{AccountID: acct, Emails: emails(4, "x"), IdempotencyKey: "batch-1"})
	var ie *credits.InsufficientError
	if !errors.Is(err, credits.ErrInsufficient) || !errors.As(err, &ie) || ie.Balance != 3 || ie.Required != 4 {
		t.Fatalf("EnqueueCharged of 4 with 3 credits: %v", err)
	}
	if n := balance(t, b, acct); n != 3 {
		t.Fatalf("balance %d after a refused batch, want 3", n)
	}
	if h, _ := b.ledger.History(ctx, acct); len(h) != 1 {
		t.Fatalf("history after a refused batch: %+v", h)
	}
	if ls := mustLease(t, b, 100, time.Second); len(ls) != 0 {
		t.Fatalf("a refused batch created %d jobs", len(ls))
	}
}

func testChargedIdempotent(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	grant(t, b, acct, 10)
	p := jobtype.EnqueueChargedParams{AccountID: acct, Emails: emails(3, "y"), IdempotencyKey: "batch-1"}
	ids, err := b.q.EnqueueCharged(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	checkIncreasing(t, ids)
	if n := balance(t, b, acct); n != 7 {
		t.Fatalf("balance %d, want 7", n)
	}
	j, err := b.q.Get(ctx, acct, ids[0])
	if err != nil || j.Cost != 1 {
		t.Fatalf("charged job %+v, %v; want cost 1", j, err)
	}
	again, err := b.q.EnqueueCharged(ctx, p)
	if _, ok := b.Driver.(jobsdriver.ChargingDriver); !ok {
		if !errors.Is(err, jobtype.ErrBatchReplayed) {
			t.Fatalf("replayed batch: %v, want ErrBatchReplayed", err)
		}
	} else if err != nil || strings.Join(again, ",") != strings.Join(ids, ",") {
		t.Fatalf("replayed batch: %v, %v; want the original ids %v", again, err, ids)
	}
	p.Emails = emails(2, "z")
	if _, err := b.q.EnqueueCharged(ctx, p); !errors.Is(err, credits.ErrIdempotencyConflict) {
		t.Fatalf("key reused with another count: %v, want ErrIdempotencyConflict", err)
	}
	if n := balance(t, b, acct); n != 7 {
		t.Fatalf("balance %d after replays, want 7", n)
	}
	if ls := mustLease(t, b, 100, time.Second); len(ls) != 3 {
		t.Fatalf("%d jobs exist, want 3", len(ls))
	}
	// Without a key, every call is a new batch.
	p = jobtype.EnqueueChargedParams{AccountID: acct, Emails: emails(2, "w")}
	for range 2 {
		if _, err := b.q.EnqueueCharged(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if n := balance(t, b, acct); n != 3 {
		t.Fatalf("balance %d, want 3", n)
	}
}

// testChargedFingerprint: a key reused for a batch of the same size but
// another fingerprint is a conflict, and charges nothing.
func testChargedFingerprint(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	grant(t, b, acct, 10)
	p := jobtype.EnqueueChargedParams{AccountID: acct, Emails: emails(3, "f"), IdempotencyKey: "batch-fp", Fingerprint: "fp-1"}
	ids, err := b.q.EnqueueCharged(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.q.EnqueueCharged(ctx, p)
	if _, ok := b.Driver.(jobsdriver.ChargingDriver); !ok {
		if !errors.Is(err, jobtype.ErrBatchReplayed) {
			t.Fatalf("replayed batch: %v, want ErrBatchReplayed", err)
		}
	} else if err != nil || strings.Join(again, ",") != strings.Join(ids, ",") {
		t.Fatalf("replayed batch: %v, %v; want the original ids %v", again, err, ids)
	}
	other := p
	other.Emails = emails(3, "g")
	other.Fingerprint = "fp-2"
	if _, err := b.q.EnqueueCharged(ctx, other); !errors.Is(err, credits.ErrIdempotencyConflict) {
		t.Fatalf("key reused with another fingerprint: %v, want ErrIdempotencyConflict", err)
	}
	if n := balance(t, b, acct); n != 7 {
		t.Fatalf("balance %d after replays, want 7", n)
	}
	if ls := mustLease(t, b, 100, time.Second); len(ls) != 3 {
		t.Fatalf("%d jobs exist, want 3", len(ls))
	}
}

// testUnusualAddresses checks that any text the API hands on is stored and
// read back as it was: U+FFFD (which stands for NUL bytes and invalid
// UTF-8 at the API), non-ASCII, quotes and the longest address.
func testUnusualAddresses(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	in := []string{
		"a\uFFFDb@example.org",
		"\uFFFD@example.org",
		"jöhn.dœ@bücher.example",
		`"quoted local"@example.org`,
		"o'brien@example.org",
		strings.Repeat("x", 64) + "@" + strings.Repeat("d", 185) + ".com",
	}
	ids, err := b.q.Enqueue(ctx, acct, in)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		j, err := b.q.Get(ctx, acct, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Email != in[i] {
			t.Errorf("job %s: email %q, want %q", id, j.Email, in[i])
		}
	}
}
