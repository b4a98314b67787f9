package creditstest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
)

// testGroupedMixed: charges of several amounts that the balance can cover
// only some of, keys repeated within and across groups (now and then with
// another amount), keyed refunds, and callers that give up part-way, from
// three ledgers at once. Every outcome answered is consistent with the
// history: a key is written once and answered with that entry, each
// charge is whole or absent, a refusal names a balance short of the
// amount, and the balance is the sum of the entries.
func testGroupedMixed(t *testing.T, l *credits.Ledger, s credits.Store) {
	ctx := context.Background()
	acct := account()
	if _, err := l.Grant(ctx, acct, 60, ""); err != nil {
		t.Fatal(err)
	}
	ledgers := []*credits.Ledger{l, credits.New(s, nil), credits.New(s, nil)}
	amount := func(k int) int64 { return int64(k%4 + 1) }
	type outcome struct {
		key   string
		delta int64
		e     credits.Entry
	}
	var mu sync.Mutex
	var answered []outcome
	var wg sync.WaitGroup
	sem := make(chan struct{}, 48)
	for i := range 600 {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			led := ledgers[i%len(ledgers)]
			cctx := ctx
			if i%7 == 0 {
				var cancel context.CancelFunc
				cctx, cancel = context.WithTimeout(ctx, time.Duration(rand.N(3000))*time.Microsecond)
				defer cancel()
			}
			var c credits.Change
			switch k := rand.N(120); {
			case i%9 == 0:
				c = credits.Change{AccountID: acct, Delta: 2, Reason: credits.ReasonRefund, Reference: "r", IdempotencyKey: fmt.Sprintf("rf-%d", k%30)}
			case i%11 == 0:
				c = credits.Change{AccountID: acct, Delta: -amount(k) - 1, Reason: credits.ReasonCharge, IdempotencyKey: fmt.Sprintf("k-%d", k)}
			case i%13 == 0:
				c = credits.Change{AccountID: acct, Delta: -amount(k), Reason: credits.ReasonCharge}
			default:
				c = credits.Change{AccountID: acct, Delta: -amount(k), Reason: credits.ReasonCharge, IdempotencyKey: fmt.Sprintf("k-%d", k)}
			}
			e, err := led.Apply(cctx, c)
			var ie *credits.InsufficientError
			switch {
			case err == nil:
				if e.Delta != c.Delta || e.IdempotencyKey != c.IdempotencyKey || e.AccountID != acct {
					t.Errorf("change %+v answered with entry %+v", c, e)
				}
				mu.Lock()
				answered = append(answered, outcome{c.IdempotencyKey, c.Delta, e})
				mu.Unlock()
			case errors.As(err, &ie):
				if c.Delta > 0 || ie.Required != -c.Delta || ie.Balance < 0 || ie.Balance >= ie.Required {
					t.Errorf("change %+v refused with %+v", c, ie)
				}
			case errors.Is(err, credits.ErrIdempotencyConflict):
				if c.IdempotencyKey == "" {
					t.Errorf("change without a key: %v", err)
				}
			case cctx.Err() != nil:
			default:
				t.Errorf("change %+v: %v", c, err)
			}
		})
	}
	wg.Wait()
	var sum int64
	h, err := l.History(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]credits.Entry{}
	byKey := map[string]credits.Entry{}
	for _, e := range h {
		sum += e.Delta
		byID[e.ID] = e
		if e.IdempotencyKey == "" {
			continue
		}
		if prev, dup := byKey[e.IdempotencyKey]; dup {
			t.Errorf("key %s written twice: entries %s and %s", e.IdempotencyKey, prev.ID, e.ID)
		}
		byKey[e.IdempotencyKey] = e
	}
	for _, o := range answered {
		w, ok := byID[o.e.ID]
		if !ok || w.Delta != o.delta {
			t.Errorf("answered entry %+v: in the history as %+v (%v)", o.e, w, ok)
		}
		if o.key != "" && byKey[o.key].ID != o.e.ID {
			t.Errorf("key %s answered with entry %s, written as %s", o.key, o.e.ID, byKey[o.key].ID)
		}
	}
	bal, err := l.Balance(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	if bal != sum || bal < 0 {
		t.Fatalf("balance %d, entries' sum %d", bal, sum)
	}
}
