// Package creditstest is the conformance suite for [credits.Store]
// backends. A deployment's backend runs it, with every other suite,
// through storetest.RunBackend; [Run] is the credits part alone.
package creditstest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/validmail/validmail/credits"
)

// Run checks that the stores made by newStore behave as [credits.Store]
// promises. Each subtest runs in parallel with its own store from
// newStore and its own account names, so newStore may also hand out one
// shared store.
func Run(t *testing.T, newStore func(tb testing.TB) credits.Store) {
	tests := []struct {
		name string
		f    func(t *testing.T, l *credits.Ledger, s credits.Store)
	}{
		{"UnknownAccountIsEmpty", testUnknownAccount},
		{"GrantChargeRefund", testGrantChargeRefund},
		{"ChargeAllOrNothing", testAllOrNothing},
		{"ConcurrentCharges", testConcurrentCharges},
		{"ApplyGroup", testApplyGroup},
		{"GroupedConcurrent", testGroupedConcurrent},
		{"GroupedMixed", testGroupedMixed},
		{"Idempotency", testIdempotency},
		{"IdempotencyConcurrent", testIdempotencyConcurrent},
		{"InvalidChanges", testInvalid},
		{"AccountsAreSeparate", testSeparate},
		{"ContextCanceled", testCanceled},
		{"PageOrder", testPageOrder},
		{"PageWhileWriting", testPageWhileWriting},
		{"PageBadParams", testPageBadParams},
		{"Totals", testTotals},
		{"TotalsConcurrent", testTotalsConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			if s == nil {
				t.Fatal("creditstest: no credits.Store")
			}
			tt.f(t, credits.New(s, nil), s)
		})
	}
}

func account() string { return "acct-" + uuid.NewString() }

// checkSum fails t unless the account's history sums to want and its balance
// equals want.
func checkSum(t *testing.T, l *credits.Ledger, acct string, want int64) []credits.Entry {
	t.Helper()
	ctx := context.Background()
	bal, err := l.Balance(ctx, acct)
	if err != nil {
		t.Fatalf("Balance: %v", err)
	}
	h, err := l.History(ctx, acct)
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	var sum int64
	for _, e := range h {
		sum += e.Delta
		if e.AccountID != acct {
			t.Errorf("history entry of account %q in %q", e.AccountID, acct)
		}
		if e.Replayed {
			t.Errorf("history entry %s has Replayed set", e.ID)
		}
	}
	if bal != want || sum != want {
		t.Fatalf("balance %d, history sum %d; want both %d", bal, sum, want)
	}
	return h
}

func testUnknownAccount(t *testing.T, l *credits.Ledger, _ credits.Store) {
	acct := account()
	if h := checkSum(t, l, acct, 0); len(h) != 0 {
		t.Fatalf("history of a new account has %d entries", len(h))
	}
	_, err := l.Charge(context.Background(), acct, 1, "")
	var ie *credits.InsufficientError
	if !errors.Is(err, credits.ErrInsufficient) || !errors.As(err, &ie) || ie.Balance != 0 || ie.Required != 1 {
		t.Fatalf("charge of an empty account: %v, want InsufficientError{0 1}", err)
	}
}

func testGrantChargeRefund(t *testing.T, l *credits.Ledger, _ credits.Store) {
	ctx := context.Background()
	acct := account()
	g, err := l.Grant(ctx, acct, 10, "")
	if err != nil {
		t.Fatal(err)
	}
	if g.Delta != 10 || g.Reason != credits.ReasonGrant || g.AccountID != acct || g.ID == "" || g.Time.IsZero() {
		t.Fatalf("grant entry %+v", g)
	}
	c, err := l.Charge(ctx, acct, 3, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if c.Delta != -3 || c.Reason != credits.ReasonCharge || c.IdempotencyKey != "c1" || c.Replayed {
		t.Fatalf("charge entry %+v", c)
	}
	r, err := l.Refund(ctx, acct, 1, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Delta != 1 || r.Reason != credits.ReasonRefund {
		t.Fatalf("refund entry %+v", r)
	}
	h := checkSum(t, l, acct, 8)
	if len(h) != 3 || h[0].ID != g.ID || h[1].ID != c.ID || h[2].ID != r.ID {
		t.Fatalf("history %+v, want grant, charge, refund in order", h)
	}
}

func testAllOrNothing(t *testing.T, l *credits.Ledger, _ credits.Store) {
	ctx := context.Background()
	acct := account()
	if _, err := l.Grant(ctx, acct, 4, ""); err != nil {
		t.Fatal(err)
	}
	_, err := l.Charge(ctx, acct, 5, "big")
	var ie *credits.InsufficientError
	if !errors.As(err, &ie) || !errors.Is(err, credits.ErrInsufficient) {
		t.Fatalf("charge 5 of 4: %v, want InsufficientError", err)
	}
	if ie.Balance != 4 || ie.Required != 5 {
		t.Fatalf("InsufficientError %+v, want balance 4 required 5", ie)
	}
	if h := checkSum(t, l, acct, 4); len(h) != 1 {
		t.Fatalf("a refused charge wrote history: %+v", h)
	}
	// The key of a refused charge is not consumed.
	if _, err := l.Grant(ctx, acct, 1, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Charge(ctx, acct, 5, "big"); err != nil {
		t.Fatalf("charge 5 of 5 under the refused key: %v", err)
	}
	checkSum(t, l, acct, 0)
}

func testConcurrentCharges(t *testing.T, l *credits.Ledger, _ credits.Store) {
	ctx := context.Background()
	acct := account()
	if _, err := l.Grant(ctx, acct, 300, ""); err != nil {
		t.Fatal(err)
	}
	const n = 1000
	var ok, insufficient atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			_, err := l.Charge(ctx, acct, 1, fmt.Sprintf("charge-%d", i))
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, credits.ErrInsufficient):
				insufficient.Add(1)
			default:
				t.Errorf("charge %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 300 || insufficient.Load() != n-300 {
		t.Fatalf("%d charges succeeded and %d were refused; want 300 and %d", ok.Load(), insufficient.Load(), n-300)
	}
	if h := checkSum(t, l, acct, 0); len(h) != 301 {
		t.Fatalf("history has %d entries, want 301", len(h))
	}
}

func testIdempotency(t *testing.T, l *credits.Ledger, _ credits.Store) {
	ctx := context.Background()
	acct := account()
	if _, err := l.Grant(ctx, acct, 10, "grant-1"); err != nil {
		t.Fatal(err)
	}
	first, err := l.Charge(ctx, acct, 3, "k")
	if err != nil {
		t.Fatal(err)
	}
	again, err := l.Charge(ctx, acct, 3, "k")
	if err != nil {
		t.Fatalf("repeated charge: %v", err)
	}
	if !again.Replayed || again.ID != first.ID || again.Delta != -3 {
		t.Fatalf("repeated charge returned %+v, want the original entry %s replayed", again, first.ID)
	}
	if _, err := l.Charge(ctx, acct, 4, "k"); !errors.Is(err, credits.ErrIdempotencyConflict) {
		t.Fatalf("same key, other amount: %v, want ErrIdempotencyConflict", err)
	}
	if _, err := l.Refund(ctx, acct, 3, "k"); !errors.Is(err, credits.ErrIdempotencyConflict) {
		t.Fatalf("same key, other reason: %v, want ErrIdempotencyConflict", err)
	}
	if g, err := l.Grant(ctx, acct, 10, "grant-1"); err != nil || !g.Replayed {
		t.Fatalf("repeated grant: %+v, %v", g, err)
	}
	// Keys are per account.
	other := account()
	if _, err := l.Grant(ctx, other, 3, ""); err != nil {
		t.Fatal(err)
	}
	if e, err := l.Charge(ctx, other, 3, "k"); err != nil || e.Replayed {
		t.Fatalf("key of another account: %+v, %v", e, err)
	}
	checkSum(t, l, acct, 7)
	checkSum(t, l, other, 0)
}

func testIdempotencyConcurrent(t *testing.T, l *credits.Ledger, _ credits.Store) {
	ctx := context.Background()
	acct := account()
	if _, err := l.Grant(ctx, acct, 100, ""); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var fresh atomic.Int64
	for range 50 {
		wg.Go(func() {
			e, err := l.Charge(ctx, acct, 7, "once")
			if err != nil {
				t.Errorf("charge: %v", err)
				return
			}
			if !e.Replayed {
				fresh.Add(1)
			}
		})
	}
	wg.Wait()
	if fresh.Load() != 1 {
		t.Fatalf("%d calls applied the charge, want 1", fresh.Load())
	}
	checkSum(t, l, acct, 93)
}

func testInvalid(t *testing.T, l *credits.Ledger, s credits.Store) {
	ctx := context.Background()
	acct := account()
	for _, f := range []func() (credits.Entry, error){
		func() (credits.Entry, error) { return l.Charge(ctx, acct, 0, "") },
		func() (credits.Entry, error) { return l.Charge(ctx, acct, -1, "") },
		func() (credits.Entry, error) { return l.Grant(ctx, acct, 0, "") },
		func() (credits.Entry, error) { return l.Refund(ctx, acct, -5, "") },
		func() (credits.Entry, error) { return l.Grant(ctx, "", 5, "") },
		func() (credits.Entry, error) {
			return s.Apply(ctx, credits.Change{AccountID: acct, Reason: credits.ReasonGrant})
		},
	} {
		if _, err := f(); !errors.Is(err, credits.ErrInvalidAmount) {
			t.Errorf("got %v, want ErrInvalidAmount", err)
		}
	}
	checkSum(t, l, acct, 0)
}

func testSeparate(t *testing.T, l *credits.Ledger, _ credits.Store) {
	ctx := context.Background()
	a, b := account(), account()
	if _, err := l.Grant(ctx, a, 5, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Charge(ctx, b, 1, ""); !errors.Is(err, credits.ErrInsufficient) {
		t.Fatalf("charge of b: %v", err)
	}
	checkSum(t, l, a, 5)
	checkSum(t, l, b, 0)
}

func testCanceled(t *testing.T, l *credits.Ledger, _ credits.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	acct := account()
	if _, err := l.Grant(ctx, acct, 5, ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("grant with a canceled context: %v, want context.Canceled", err)
	}
	checkSum(t, l, acct, 0)
}
