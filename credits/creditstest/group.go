package creditstest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/validmail/validmail/credits"
)

// testApplyGroup: a group's changes are judged in order, each as it would
// be alone after the ones before it.
func testApplyGroup(t *testing.T, l *credits.Ledger, s credits.Store) {
	gs, ok := s.(credits.GroupStore)
	if !ok {
		t.Skip("the store applies changes one by one")
	}
	ctx := context.Background()
	acct := account()
	if _, err := l.Grant(ctx, acct, 10, ""); err != nil {
		t.Fatal(err)
	}
	earlier, err := l.Charge(ctx, acct, 1, "before")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Charge(ctx, acct, 1, "other"); err != nil {
		t.Fatal(err)
	}
	charge := func(n int64, key string) credits.Change {
		return credits.Change{AccountID: acct, Delta: -n, Reason: credits.ReasonCharge, Reference: "ref-" + key, IdempotencyKey: key}
	}
	cs := []credits.Change{
		charge(5, "a"),      // 8 → 3
		charge(4, "b"),      // refused: 3 left
		charge(1, "before"), // a replay: nothing changes
		charge(3, ""),       // 3 → 0
		{AccountID: acct, Delta: 6, Reason: credits.ReasonRefund, Reference: "r", IdempotencyKey: "r"}, // 0 → 6
		charge(1, "c"),     // 6 → 5
		charge(9, "other"), // a key used before with another amount
	}
	entries, errs, err := gs.ApplyGroup(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(cs) || len(errs) != len(cs) {
		t.Fatalf("%d entries and %d errors for %d changes", len(entries), len(errs), len(cs))
	}
	for i, c := range cs {
		switch i {
		case 1:
			var ie *credits.InsufficientError
			if !errors.As(errs[i], &ie) || ie.Balance != 3 || ie.Required != 4 {
				t.Errorf("change %d: %v, want insufficient (balance 3, required 4)", i, errs[i])
			}
		case 2:
			if errs[i] != nil || !entries[i].Replayed || entries[i].ID != earlier.ID {
				t.Errorf("change %d: %+v, %v; want the replay of entry %s", i, entries[i], errs[i], earlier.ID)
			}
		case 6:
			if !errors.Is(errs[i], credits.ErrIdempotencyConflict) {
				t.Errorf("change %d: %v, want an idempotency conflict", i, errs[i])
			}
		default:
			e := entries[i]
			if errs[i] != nil || e.Replayed || e.Delta != c.Delta || e.Reason != c.Reason || e.Reference != c.Reference || e.IdempotencyKey != c.IdempotencyKey || e.ID == "" {
				t.Errorf("change %d: %+v, %v; want it written as %+v", i, e, errs[i], c)
			}
		}
	}
	if entries[0].ID >= entries[3].ID && len(entries[0].ID) >= len(entries[3].ID) {
		t.Errorf("entries %s and %s are not in the group's order", entries[0].ID, entries[3].ID)
	}
	h := checkSum(t, l, acct, 5)
	if len(h) != 7 {
		t.Errorf("history has %d entries, want 7 (grant, two charges, and four of the group)", len(h))
	}
}

// testGroupedConcurrent: charges, refunds and repeated keys of one account
// from many goroutines and two ledgers (two instances) at once: the
// balance is the sum of the entries, no key is written twice, and exactly
// as many charges go through as the credits cover.
func testGroupedConcurrent(t *testing.T, l *credits.Ledger, s credits.Store) {
	ctx := context.Background()
	acct := account()
	const credit, n = 400, 1200
	if _, err := l.Grant(ctx, acct, credit, ""); err != nil {
		t.Fatal(err)
	}
	ledgers := []*credits.Ledger{l, credits.New(s, nil)}
	var mu sync.Mutex
	charged := map[string]string{} // key → entry id
	ok, refunds := 0, 0
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			led := ledgers[i%2]
			// Every key is charged twice, from both ledgers.
			key := fmt.Sprintf("k-%d", i/2)
			e, err := led.Charge(ctx, acct, 1, key)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				if prev, seen := charged[key]; seen && prev != e.ID {
					t.Errorf("key %s charged twice: entries %s and %s", key, prev, e.ID)
				}
				if !e.Replayed {
					ok++
				}
				charged[key] = e.ID
			case errors.Is(err, credits.ErrInsufficient):
			default:
				t.Errorf("charge %s: %v", key, err)
			}
			if i%10 == 0 {
				if _, err := led.Refund(ctx, acct, 1, fmt.Sprintf("refund-%d", i)); err != nil {
					t.Errorf("refund %d: %v", i, err)
				} else {
					refunds++
				}
			}
		})
	}
	wg.Wait()
	bal := int64(credit - ok + refunds)
	if ok > credit+refunds || bal < 0 {
		t.Fatalf("%d charges went through with %d credits and %d refunds", ok, credit, refunds)
	}
	if ok < credit {
		t.Fatalf("only %d charges went through with %d credits", ok, credit)
	}
	checkSum(t, l, acct, bal)
}
